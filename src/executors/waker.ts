/**
 * A loop's pause: it waits `ms`, or less when woken. A wake that comes while the loop is busy is kept,
 * so the next pause ends at once and no request for a cycle is lost.
 */
export class Waker {
  #pending = false;
  #resolve: (() => void) | undefined;

  wake(): void {
    this.#pending = true;
    this.#resolve?.();
  }

  async pause(ms: number): Promise<void> {
    if (!this.#pending) {
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, ms);
        this.#resolve = () => {
          clearTimeout(timer);
          resolve();
        };
      });
      this.#resolve = undefined;
    }
    this.#pending = false;
  }
}
