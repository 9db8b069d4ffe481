// One pino logger per process, passed down as child loggers (STYLE.md 13).

import { pino, type DestinationStream, type Logger } from 'pino';

export type { Logger };

export const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;

export function createLogger(
  options: { level: string; name: string },
  destination?: DestinationStream,
): Logger {
  return pino(
    {
      name: options.name,
      level: options.level,
      base: { component: options.name },
      timestamp: pino.stdTimeFunctions.isoTime,
      formatters: { level: (label) => ({ level: label }) },
    },
    destination ?? pino.destination({ fd: 1, sync: false }),
  );
}
