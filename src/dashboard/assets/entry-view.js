// One entry's or dead letter's whole fields, in the section below the details.
import { getJson } from './api.js';
import { el, fieldEl, nameEl, setStatus, table } from './dom.js';

/** An entry's or a dead letter's whole fields, fetched on demand, in the section below the details. */
function showFields(title, fields) {
  const section = document.getElementById('entry');
  const rows = fields.map(([name, value]) => el('tr', {}, el('td', { className: 'name field-name' }, fieldEl(name)), el('td', {}, el('pre', { className: 'fields' }, fieldEl(value)))));
  section.replaceChildren(
    el('div', { className: 'toolbar' },
      el('h2', {}, ...title),
      el('button', { type: 'button', text: 'Close', onclick: () => { section.hidden = true; } })),
    table(['Field', 'Value'], rows, 'No fields.'));
  section.hidden = false;
}

export async function inspect(stream, id) {
  try {
    const entry = await getJson('entry', [['stream', stream], ['id', id]]);
    showFields(['Entry ', el('span', { className: 'name', text: entry.id }), ' of ', nameEl(stream)], entry.fields);
  } catch (error) {
    setStatus(error.message, true);
  }
}

export async function inspectDeadLetter(letter) {
  try {
    const whole = await getJson('dead-letter', [['stream', letter.sourceStream], ['id', letter.deadLetterId]]);
    showFields(['Dead letter ', el('span', { className: 'name', text: whole.deadLetterId }), ' of ', nameEl(whole.sourceStream)], whole.fields);
  } catch (error) {
    setStatus(error.message, true);
  }
}
