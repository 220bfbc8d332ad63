/** Rejects when `promise` has not settled within `ms`: every wait in a test is bounded. */
export function within<T>(promise: Promise<T>, what: string, ms = 4_000): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what}: nothing within ${ms} ms`)), ms);
  });
  return Promise.race([promise, late]).finally(() => clearTimeout(timer));
}
