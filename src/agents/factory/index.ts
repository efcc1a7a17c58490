/** The pilot factory (docs/pilots.md, "The factory"): pilots sent to a batch system while jobs wait for them. */
export { startPilotFactory } from './duty.ts';
