import type { RegisterCommand } from '../context.js';
import { registerAckCommand } from './ack.command.js';
import { registerCancelCommand } from './cancel.command.js';
import { registerClaimCommand } from './claim.command.js';
import { registerDelayedCommand } from './delayed.command.js';
import { registerDlqCommand } from './dlq.command.js';
import { registerEntryCommand } from './entry.command.js';
import { registerInfoCommand } from './info.command.js';
import { registerPauseCommands } from './pause.command.js';
import { registerPendingCommand } from './pending.command.js';
import { registerTopCommand } from './top.command.js';

/** Every subcommand, in help order. Add a command: one file in this folder and one entry here. */
export const COMMANDS: readonly RegisterCommand[] = [
  registerClaimCommand,
  registerAckCommand,
  registerPendingCommand,
  registerInfoCommand,
  registerDlqCommand,
  registerEntryCommand,
  registerCancelCommand,
  registerDelayedCommand,
  registerTopCommand,
  registerPauseCommands,
];
