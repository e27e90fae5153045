// The operator's actions: a confirmation, the POST, its result in the status line, a refresh.
import { postJson } from './api.js';
import { isolated, setStatus } from './dom.js';
import { refreshNow } from './refresh.js';
import { state } from './state.js';

export async function act(question, path, body) {
  if (!window.confirm(question)) return;
  await send(path, body);
}

/** Sends an action (confirmed by the caller), says its result, refreshes; the result, or null when it failed. */
export async function send(path, body) {
  let result = null;
  try {
    result = await postJson(path, body);
    setStatus(describeResult(result));
  } catch (error) {
    setStatus(error.message, true);
  }
  await refreshNow();
  return result;
}

export async function claim(stream, group, entry) {
  const consumer = window.prompt(`Claim entry ${entry.id} (held by "${isolated(entry.consumer)}") for which consumer of group "${isolated(group)}"?`, 'dashboard');
  if (consumer === null || consumer === '') return;
  await send('pending/claim', { stream, group, owner: entry.consumer, consumer, ids: [entry.id] });
}

export async function onTicked(action) {
  const byStream = new Map();
  for (const ticked of state.ticked) {
    const [stream, id] = ticked.split('\n');
    byStream.set(stream, [...(byStream.get(stream) || []), id]);
  }
  const count = state.ticked.size;
  if (count === 0) return setStatus('Select dead letters first.', true);
  const verb = action === 'redrive' ? 'Redrive' : 'Delete for good';
  if (!window.confirm(`${verb} ${count} selected dead letter${count === 1 ? '' : 's'}?`)) return;
  state.ticked.clear();
  for (const [stream, ids] of byStream) await send(`dead-letters/${action}`, { stream, ids });
}

function describeResult(result) {
  if (typeof result.paused === 'boolean') {
    const where = `group "${isolated(result.group)}" on "${isolated(result.stream)}"`;
    if (result.paused) return result.changed ? `${where} paused` : `${where} was already paused`;
    return result.changed ? `${where} resumed` : `${where} was not paused`;
  }
  if (result.redriven) return `${result.redriven.length} redriven, ${result.skipped.length} skipped`;
  if (typeof result.purged === 'number') return `${result.purged} purged`;
  if (typeof result.acked === 'number') return `${result.acked} acknowledged`;
  if (result.handedOff) return `${result.handedOff.length} claimed, ${result.lost.length} held by another consumer by now`;
  if (typeof result.removed === 'number') return `${result.removed} removed`;
  if (result.hold !== undefined && result.promoted) {
    const skipped = result.skipped.find((one) => one.hold === result.hold);
    if (result.promoted.some((one) => one.hold === result.hold)) return `${isolated(result.hold)} promoted`;
    return skipped ? `${isolated(result.hold)} not promoted: ${skipped.status}` : `${isolated(result.hold)} was not held any more`;
  }
  if (typeof result.cancelled === 'boolean') return result.cancelled ? `entry ${isolated(result.id)} cancelled (was ${result.previous}): dead letter ${result.deadLetter.id}` : `entry ${isolated(result.id)} is ${result.previous}: nothing to cancel`;
  if (result.outcomes) return `consumer: ${result.outcomes.map((outcome) => outcome.status).join(', ')}`;
  return 'done';
}
