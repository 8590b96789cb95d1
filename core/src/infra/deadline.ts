// Answers bounded in time whatever the client library does: readiness must answer within its own deadline
// even when a dependency accepts connections and then says nothing, and a failed request must not wait on
// the dependency that failed it.

/** What `answer` resolves to within `deadlineMs`; undefined when it fails or is late (its late outcome is ignored). */
export async function withinDeadline<T>(answer: Promise<T>, deadlineMs: number): Promise<T | undefined> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<undefined>((resolve) => {
    timer = setTimeout(() => resolve(undefined), deadlineMs);
  });
  try {
    // race() subscribes to the answer, so its late failure is not left unhandled.
    return await Promise.race([answer.catch(() => undefined), late]);
  } finally {
    clearTimeout(timer);
  }
}

/** Whether `check` resolves true within `deadlineMs`; false when it fails or is late. */
export async function answersWithin(check: () => Promise<boolean>, deadlineMs: number): Promise<boolean> {
  return (await withinDeadline(check(), deadlineMs)) === true;
}
