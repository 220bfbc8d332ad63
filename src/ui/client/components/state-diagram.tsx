/**
 * The order state machine (docs/pharmacy-guide.md, "State diagrams") as an
 * inline SVG, with the order's current state marked by a heavier outline,
 * a fill and the word "current" — and said in the image's description.
 */
const STATES = {
  open: { x: 10, y: 90 },
  allocated: { x: 245, y: 90 },
  dispensed: { x: 480, y: 90 },
  cancelled: { x: 245, y: 10 },
  expired: { x: 245, y: 170 },
} as const;

type State = keyof typeof STATES;

const W = 110;
const H = 40;

/** Transitions: what moves an order from one state to the next. */
const EDGES: Array<[State, State, string]> = [
  ["open", "allocated", "allocate"],
  ["allocated", "dispensed", "dispense summary"],
  ["open", "cancelled", "cancel"],
  ["allocated", "cancelled", "cancel"],
  ["open", "expired", "deadline"],
];

/** A line from the border of one box to the border of the other, along the line between their centres. */
function edge(from: State, to: State) {
  const a = { x: STATES[from].x + W / 2, y: STATES[from].y + H / 2 };
  const b = { x: STATES[to].x + W / 2, y: STATES[to].y + H / 2 };
  const dx = b.x - a.x;
  const dy = b.y - a.y;
  // The fraction of the centre-to-centre line that lies inside a box.
  const t = Math.min(
    dx === 0 ? Number.POSITIVE_INFINITY : W / 2 / Math.abs(dx),
    dy === 0 ? Number.POSITIVE_INFINITY : H / 2 / Math.abs(dy),
  );
  return { x1: a.x + dx * t, y1: a.y + dy * t, x2: b.x - dx * t, y2: b.y - dy * t };
}

export function OrderStateDiagram({ state }: { state: string }) {
  const description = `Current state: ${state}. An order starts open; it is allocated to a pharmacy, then dispensed; an open order expires at its deadline when nothing is allocated; an open or allocated order can be cancelled.`;
  return (
    <figure class="diagram">
      <svg viewBox="0 0 600 220" role="img" aria-labelledby="diagram-title diagram-desc" class="state-diagram">
        <title id="diagram-title">Order state diagram</title>
        <desc id="diagram-desc">{description}</desc>
        <defs>
          <marker id="arrow" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="7" markerHeight="7" orient="auto">
            <path d="M0,0 L10,5 L0,10 z" class="arrow-head" />
          </marker>
        </defs>
        {EDGES.map(([from, to, label]) => {
          const e = edge(from, to);
          return (
            <g class="edge">
              <line x1={e.x1} y1={e.y1} x2={e.x2} y2={e.y2} marker-end="url(#arrow)" />
              {/* Above a horizontal arrow, beside any other. */}
              <text
                x={(e.x1 + e.x2) / 2 + (e.y1 === e.y2 ? 0 : 6)}
                y={(e.y1 + e.y2) / 2 - 6}
                text-anchor={e.y1 === e.y2 ? "middle" : "start"}
              >
                {label}
              </text>
            </g>
          );
        })}
        {(Object.keys(STATES) as State[]).map((name) => {
          const { x, y } = STATES[name];
          const current = name === state;
          return (
            <g class={current ? "state current" : "state"}>
              <rect x={x} y={y} width={W} height={H} rx="8" />
              <text x={x + W / 2} y={y + (current ? 17 : 25)} text-anchor="middle">
                {name}
              </text>
              {current ? (
                <text x={x + W / 2} y={y + 33} text-anchor="middle" class="current-label">
                  current
                </text>
              ) : null}
            </g>
          );
        })}
      </svg>
      <figcaption>Order states; the current one is outlined and labelled “current”.</figcaption>
    </figure>
  );
}
