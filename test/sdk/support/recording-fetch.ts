// A fetch for the SDK under test that passes each request on (or answers it itself) and records what happened.

export interface RecordedCall {
  method: string;
  /** Path and query. */
  path: string;
  status: number;
  ifNoneMatch: string | null;
}

/** `answer` may answer a request itself (a Response, or a rejection for a network failure); else it is sent. */
export function recordingFetch(answer: (request: Request) => Promise<Response> | undefined = () => undefined): {
  fetch: (request: Request) => Promise<Response>;
  calls: RecordedCall[];
} {
  const calls: RecordedCall[] = [];
  return {
    calls,
    fetch: async (request) => {
      const url = new URL(request.url);
      const response = await (answer(request) ?? fetch(request));
      calls.push({
        method: request.method,
        path: url.pathname + url.search,
        status: response.status,
        ifNoneMatch: request.headers.get('if-none-match'),
      });
      return response;
    },
  };
}
