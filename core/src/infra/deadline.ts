// A health check bounded in time whatever the client library does: readiness must answer within its own
// deadline even when a dependency accepts connections and then says nothing.

/** Whether `check` resolves true within `deadlineMs`; false when it fails or is late (its late outcome is ignored). */
export async function answersWithin(check: () => Promise<boolean>, deadlineMs: number): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<boolean>((resolve) => {
    timer = setTimeout(() => resolve(false), deadlineMs);
  });
  try {
    // race() subscribes to the check, so its late failure is not left unhandled.
    return await Promise.race([check().catch(() => false), late]);
  } finally {
    clearTimeout(timer);
  }
}
