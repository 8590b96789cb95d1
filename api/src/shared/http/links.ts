/** `_links.self.href`: PUBLIC_BASE_URL + path when configured, else the path alone. */
export type LinkBuilder = (path: string) => string;

export const linkBuilder =
  (publicBaseUrl: string | undefined): LinkBuilder =>
  (path) =>
    (publicBaseUrl ?? '') + path;
