// The order a replica's services stop in (wiring.ts's close, after the server has stopped taking requests): what
// produces work first, what it hands work to after, and the caches' invalidation channel last.
export interface ShutdownOrder {
  /** The background sweeps (sweeps.ts). */
  stopSweeps: () => void;
  /** The webhook dispatcher: its attempts in flight finish, within the grace given. */
  dispatcher: { stop(graceMs: number): Promise<void> };
  /** Connection sync: no new run starts, the ones running finish (their tokens go through the vault). */
  sync: { stop(): Promise<void> };
  /** The token vault: refreshes and revocations at work settle. */
  vault: { settled(): Promise<void> };
  /** The catalog and endpoint health followers: their polls and subscriptions end. */
  catalog: { stop(): Promise<void> };
  endpointHealth: { stop(): Promise<void> };
  /** Ingested bundles applied in the background. */
  observations: { settled(): Promise<unknown> };
  /** The access log's writes still at work (their reads wait for them to answer). */
  accessLog: { flushed(): Promise<void> };
  /** The caches' invalidation channel. */
  caches: { close(): Promise<void> };
}

export async function shutDown(order: ShutdownOrder, timeoutMs: number): Promise<void> {
  order.stopSweeps();
  await order.accessLog.flushed();
  await order.dispatcher.stop(timeoutMs);
  await order.sync.stop();
  await order.vault.settled();
  await order.catalog.stop();
  await order.endpointHealth.stop();
  // Bundles committed here are applied in the background; one cut short is applied by the next writer or reader.
  await Promise.race([order.observations.settled(), new Promise((resolve) => setTimeout(resolve, timeoutMs).unref())]);
  await order.caches.close();
}
