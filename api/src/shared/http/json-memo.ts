// JSON text of entities that never change once loaded (cached, frozen records; brands of a snapshot), built
// once per entity and rendering context (a link builder, an origin) and reused by every response: hot reads
// assemble their bodies from these pieces instead of serialising the same objects again.

export class JsonMemo<E extends object, C> {
  private readonly byContext = new Map<C, WeakMap<E, string>>();

  constructor(
    private readonly present: (entity: E, context: C) => unknown,
    /** Contexts may come from requests (an origin from the Host header): past this many, start afresh. */
    private readonly maxContexts = 32,
  ) {}

  json(entity: E, context: C): string {
    let byEntity = this.byContext.get(context);
    if (!byEntity) {
      if (this.byContext.size >= this.maxContexts) this.byContext.clear();
      this.byContext.set(context, (byEntity = new WeakMap()));
    }
    let json = byEntity.get(entity);
    if (json === undefined) byEntity.set(entity, (json = JSON.stringify(this.present(entity, context))));
    return json;
  }
}
