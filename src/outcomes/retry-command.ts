import { shellQuote } from '../text/shell-quote.js';
import type { FailureSpan } from './failure-groups.js';

/**
 * The command that re-runs exactly the slices of `span` that are not `loaded` or `no_data`; with
 * `codes`, only those whose last outcome failed with one of them.
 */
export function retryCommand(command: 'run' | 'backfill', span: FailureSpan, configFile?: string, codes?: readonly string[]): string {
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
    ...(codes?.length ? ['--failed', '--code', codes.join(',')] : ['--only-missing']),
  ];
  if (configFile) parts.push('--config', shellQuote(configFile));
  return parts.join(' ');
}
