interface ClaimWaiter {
  readonly wanted: number;
  readonly resolve: (reserved: number) => void;
}

/**
 * Claims waiting for prefetch slots, in arrival order. They are served before readers: readers
 * only see the slots beyond `demand`, and freed slots go to the first waiting claim at once.
 */
export class ClaimWaiters {
  private waiters: ClaimWaiter[] = [];
  /** Slots the waiting claims want together. */
  demand = 0;

  /** A claim waiting for up to `wanted` slots; `cancel` resolves it with 0. */
  add(wanted: number): { reserved: Promise<number>; cancel: () => void } {
    let waiter!: ClaimWaiter;
    const reserved = new Promise<number>((resolve) => {
      waiter = { wanted, resolve };
    });
    this.waiters.push(waiter);
    this.demand += wanted;
    const cancel = (): void => {
      const index = this.waiters.indexOf(waiter);
      if (index === -1) return;
      this.waiters.splice(index, 1);
      this.demand -= waiter.wanted;
      waiter.resolve(0);
    };
    return { reserved, cancel };
  }

  /** While slots are free, the first waiting claim gets what `reserveNow` reserves for it (synchronously). */
  serve(freeSlots: () => number, reserveNow: (wanted: number) => number): void {
    while (this.waiters.length > 0 && freeSlots() > 0) {
      const waiter = this.waiters.shift() as ClaimWaiter;
      this.demand -= waiter.wanted;
      waiter.resolve(reserveNow(waiter.wanted));
    }
  }

  /** Every waiting claim gets nothing (the prefetch slots stop accepting: closing). */
  cancelAll(): void {
    for (const waiter of this.waiters.splice(0)) waiter.resolve(0);
    this.demand = 0;
  }
}
