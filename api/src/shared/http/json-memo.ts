// JSON text of entities that never change once loaded (cached, frozen records; brands of a snapshot), rendered
// once per entity and rendering context (a link builder, an origin) and reused by every response: hot reads
// assemble their bodies from these pieces instead of serialising the same objects again. A rendering is the JSON
// text itself, or whatever pieces of it a response is assembled from (R).

export class JsonMemo<E extends object, C, R = string> {
  private readonly byContext = new Map<C, WeakMap<E, R>>();

  constructor(
    private readonly render: (entity: E, context: C) => R,
    /** Contexts may come from requests (an origin from the Host header): past this many, start afresh. */
    private readonly maxContexts = 32,
  ) {}

  value(entity: E, context: C): R {
    let byEntity = this.byContext.get(context);
    if (!byEntity) {
      if (this.byContext.size >= this.maxContexts) this.byContext.clear();
      this.byContext.set(context, (byEntity = new WeakMap()));
    }
    let rendered = byEntity.get(entity);
    if (rendered === undefined) byEntity.set(entity, (rendered = this.render(entity, context)));
    return rendered;
  }
}
