// Which kinds of action the server takes (the session's `actions`, from the module's `actions`
// option; none when read-only): the page offers only those. The server refuses the others anyway.
import { state } from './state.js';

export const allowed = (kind) => Boolean(state.session && state.session.actions && state.session.actions.includes(kind));
