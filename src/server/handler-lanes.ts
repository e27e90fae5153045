import { BatchGate } from './batch/batch-gate.js';
import { EntryState, type InFlightEntry, type StreamBinding } from './in-flight.js';

/** What runs the entries the lanes start: `EntryHandling` (entry-handling.ts), the only implementation. */
export interface EntryRunner {
  /** Runs one entry's handler; the runner calls `finished(entry)` when it returned or failed. */
  start(entry: InFlightEntry): void;
  /** Runs a batch binding's batch; the runner calls `batchFinished(entries)` when its handler returned or failed. */
  startBatch(entries: InFlightEntry[]): void;
}

/**
 * The dispatch of admitted entries to their handlers (entry-handling.ts): at most `concurrency`
 * handlers (a batch counts as one) run at once, each binding within its own concurrency, its
 * queued entries started lane by lane in turn so no stream starves. A batch binding's lane
 * (`extras.batch`) starts a batch once its gate says it is full or due.
 *
 * The priority lanes of one pattern and group (`extras.priorities`, a binding each) take one turn
 * together, within one `concurrency` for all of them, and start their entries in the order they
 * were admitted: the reads took them highest lane first with the starvation bound
 * (priority-read.ts), and a handler slot must not undo that order.
 */
export class HandlerLanes {
  private running = 0;
  private accepting = true;
  private pumping = false;
  private nextLane = 0;
  private idleWaiters: Array<() => void> = [];
  private finishWaiters: Array<() => void> = [];
  /** Per lane (index of `bindings`): the collector of a batch binding (`extras.batch`), else undefined. */
  private readonly gates: (BatchGate<InFlightEntry> | undefined)[];
  /** Per lane: the indexes of its pattern's priority lanes (one array shared by them), else undefined. */
  private readonly priorityLanes: (readonly number[] | undefined)[];
  /**
   * Per lane: how many entries at the front of its queue were started already. They leave the queue
   * together (`takeNext`), not by one `shift()` each: shifting a queue of up to 100 entries moves
   * every element, each move a write barrier (the queue is old, its entries young), ~5,000 per read
   * of 100 entries. Only this class reads the front of a queue (the readers and claims push at its end).
   */
  private readonly heads: number[];
  /** What runs the entries: set once by `handledBy`, before any entry is admitted. */
  private handling!: EntryRunner;

  constructor(
    private readonly concurrency: number,
    private readonly bindings: readonly StreamBinding[],
  ) {
    this.gates = bindings.map((binding) => (binding.batch === undefined ? undefined : new BatchGate(binding.batch, () => this.pump())));
    this.priorityLanes = lanesByPattern(bindings);
    this.heads = bindings.map(() => 0);
  }

  /**
   * The server's one late binding (server-parts.ts): entry handling needs recovery, which needs the
   * lanes (claimed entries are dispatched here), so the lanes learn who runs their entries once it exists.
   */
  handledBy(handling: EntryRunner): void {
    this.handling = handling;
  }

  runningCount(): number {
    return this.running;
  }

  /** Entries joined `binding`'s queue: start handlers as slots allow (a batch lane's gate counts them first). */
  queued(binding: StreamBinding, entries: number): void {
    if (entries > 0 && binding.batch !== undefined) this.gates[this.bindings.indexOf(binding)]?.queued();
    this.pump();
  }

  /** The entry's handler returned (or failed): its handler slot goes to the next queued entry. */
  finished(entry: InFlightEntry): void {
    if (entry.state !== EntryState.Running) return;
    entry.state = EntryState.Finished;
    this.handlerDone(entry.binding);
  }

  /** A batch's handler returned (or failed): its one handler slot goes to the next queued work. */
  batchFinished(entries: readonly InFlightEntry[]): void {
    const first = entries[0];
    if (first === undefined || first.state !== EntryState.Running) return;
    for (const entry of entries) entry.state = EntryState.Finished;
    this.handlerDone(first.binding);
  }

  /** No handler starts any more; batches still filling are not started. */
  stop(): void {
    this.accepting = false;
    for (const gate of this.gates) gate?.cancel();
    this.wakeFinishWaiters();
  }

  /** Removes and returns every entry not started yet (for the handoff on close). */
  takeQueued(): InFlightEntry[] {
    this.dropStarted();
    const taken: InFlightEntry[] = [];
    for (const binding of this.bindings) {
      for (const entry of binding.queue) taken.push(entry);
      binding.queue.length = 0;
    }
    return taken;
  }

  /**
   * How many more of `binding`'s entries would start at once if queued now: within its own and the
   * server's `concurrency`, behind the entries queued already (any lane's may take a free slot first).
   * A queue's started entries stay at its front until their splice (`heads`): they wait no more.
   */
  startableNow(binding: StreamBinding): number {
    if (!this.accepting) return 0;
    let queued = 0;
    for (let index = 0; index < this.bindings.length; index++) queued += this.waitingIn(index);
    const lane = this.bindings.indexOf(binding);
    const own = lane < 0 ? binding.queue.length : this.waitingIn(lane);
    return Math.max(0, Math.min(binding.concurrency - binding.running - own, this.concurrency - this.running - queued));
  }

  /** Entries of lane `index` not started yet. */
  private waitingIn(index: number): number {
    return (this.bindings[index] as StreamBinding).queue.length - (this.heads[index] as number);
  }

  /** Resolves when a handler next returns or fails (its slot may start another entry), or on stop. */
  whenAHandlerFinishes(): Promise<void> {
    if (!this.accepting) return Promise.resolve();
    return new Promise((resolve) => this.finishWaiters.push(resolve));
  }

  /** Resolves when no handler runs. */
  whenIdle(): Promise<void> {
    if (this.running === 0) return Promise.resolve();
    return new Promise((resolve) => this.idleWaiters.push(resolve));
  }

  private handlerDone(binding: StreamBinding): void {
    this.running--;
    binding.running--;
    if (this.running === 0 && this.idleWaiters.length > 0) {
      const waiters = this.idleWaiters;
      this.idleWaiters = [];
      for (const wake of waiters) wake();
    }
    this.pump();
    this.wakeFinishWaiters();
  }

  private wakeFinishWaiters(): void {
    if (this.finishWaiters.length === 0) return;
    const waiters = this.finishWaiters;
    this.finishWaiters = [];
    for (const wake of waiters) wake();
  }

  /** Starts queued entries while handler slots allow, taking lanes in turn so no stream starves. */
  private pump(): void {
    // A handler that settles synchronously re-enters through finished(): the loop below goes on.
    if (this.pumping) return;
    this.pumping = true;
    try {
      this.pumpLanes();
    } finally {
      this.pumping = false;
    }
  }

  /**
   * The next queued entry of a lane without a gate, marked started. The started ones leave the
   * queue once it is all started, or in one splice once they are at least half of it (and 32):
   * each element moves O(1) times on average.
   */
  private takeNext(index: number, queue: InFlightEntry[]): InFlightEntry {
    const head = this.heads[index] as number;
    const entry = queue[head] as InFlightEntry;
    const started = head + 1;
    if (started === queue.length) {
      queue.length = 0;
      this.heads[index] = 0;
    } else if (started >= MIN_SPLICE && started * 2 >= queue.length) {
      queue.splice(0, started);
      this.heads[index] = 0;
    } else this.heads[index] = started;
    return entry;
  }

  /** Removes the started entries from the front of every queue. */
  private dropStarted(): void {
    const { heads } = this;
    for (let index = 0; index < heads.length; index++) {
      const started = heads[index] as number;
      if (started === 0) continue;
      heads[index] = 0;
      (this.bindings[index] as StreamBinding).queue.splice(0, started);
    }
  }

  private pumpLanes(): void {
    const lanes = this.bindings.length;
    while (this.accepting && this.running < this.concurrency) {
      let entry: InFlightEntry | undefined;
      let batch: InFlightEntry[] | undefined;
      for (let i = 0; i < lanes; i++) {
        const turn = (this.nextLane + i) % lanes;
        const priorityLanes = this.priorityLanes[turn];
        const index = priorityLanes === undefined ? turn : this.priorityLaneOf(turn, priorityLanes);
        if (index === undefined) continue;
        const lane = this.bindings[index] as StreamBinding;
        const head = this.heads[index] as number;
        if (lane.queue.length > head && lane.running < lane.concurrency) {
          const gate = this.gates[index];
          if (gate === undefined) entry = this.takeNext(index, lane.queue);
          else if ((batch = gate.take(lane.queue)) === undefined) continue; // still filling
          this.nextLane = (turn + 1) % lanes;
          break;
        }
      }
      if (batch !== undefined) {
        this.startBatchOf(batch);
        continue;
      }
      if (entry === undefined) return;
      entry.state = EntryState.Running;
      this.running++;
      entry.binding.running++;
      this.handling.start(entry);
    }
  }

  /**
   * The turn of a pattern's priority lanes, taken at its first lane (the others pass): the lane whose
   * first queued entry was admitted first, unless the pattern's handlers already use its concurrency.
   */
  private priorityLaneOf(turn: number, lanes: readonly number[]): number | undefined {
    if (lanes[0] !== turn) return undefined;
    let running = 0;
    let oldest: number | undefined;
    let oldestAdmission = Infinity;
    for (const index of lanes) {
      const lane = this.bindings[index] as StreamBinding;
      running += lane.running;
      const head = lane.queue[this.heads[index] as number];
      if (head !== undefined && head.admission < oldestAdmission) {
        oldest = index;
        oldestAdmission = head.admission;
      }
    }
    return running < (this.bindings[turn] as StreamBinding).concurrency ? oldest : undefined;
  }

  private startBatchOf(entries: InFlightEntry[]): void {
    for (const entry of entries) entry.state = EntryState.Running;
    this.running++;
    (entries[0] as InFlightEntry).binding.running++;
    this.handling.startBatch(entries);
  }
}

/** Started entries removed from the front of a queue at once, at least (fewer only when they are all of it). */
const MIN_SPLICE = 32;

/** Per binding index: the indexes of all lanes of its pattern and group when it is a priority lane, else undefined. */
function lanesByPattern(bindings: readonly StreamBinding[]): (readonly number[] | undefined)[] {
  const byPattern = new Map<string, number[]>();
  return bindings.map((binding, index) => {
    if (binding.priorityOf === undefined) return undefined;
    const key = `${binding.priorityOf}\u0000${binding.group}`;
    let lanes = byPattern.get(key);
    if (lanes === undefined) byPattern.set(key, (lanes = []));
    lanes.push(index);
    return lanes;
  });
}
