/** What every damhub command shares for its arguments: strict parsing, the --data option and usage errors. */
import { parseArgs, type ParseArgsConfig } from 'node:util';

/** A wrong command line: the CLI prints the message and the command's usage, and exits with 2. */
export class UsageError extends Error {}

export function parse<T extends ParseArgsConfig['options']>(args: string[], options: T, allowPositionals = false) {
  return parseArgs({ args, options, allowPositionals, strict: true });
}

export const dataOpt = { data: { type: 'string' } } as const;
