// Why a logo was refused, as a short machine-readable reason (`unsupported-type`, `parse-timeout`, …) that
// imports count per reason (`logos.reasons`).

export class LogoError extends Error {
  constructor(
    readonly reason: string,
    message: string,
  ) {
    super(message);
    this.name = 'LogoError';
  }
}
