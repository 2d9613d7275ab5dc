import type { FailureSpan } from './failure-groups.js';

/** The command that re-runs exactly the slices of `span` that are not `loaded` or `no_data`. */
export function retryCommand(command: 'run' | 'backfill', span: FailureSpan, configFile?: string): string {
  const parts = [
    'report-sync',
    command,
    '--from',
    span.from,
    '--to',
    span.to,
    '--portfolios',
    span.portfolios.join(','),
    '--report-types',
    span.reportTypes.join(','),
    '--only-missing',
  ];
  if (configFile) parts.push('--config', shellQuote(configFile));
  return parts.join(' ');
}

function shellQuote(text: string): string {
  return /^[\w./:@-]+$/.test(text) ? text : `'${text.replaceAll("'", "'\\''")}'`;
}
