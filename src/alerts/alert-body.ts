import type { FailureGroup } from '../outcomes/failure-groups.js';
import { printableText } from '../text/printable-text.js';
import { describeMeasured, type WarningGroup } from '../outcomes/warning-groups.js';
import type { AlertFormat, AlertSummary } from './alert-summary.js';
import { countOf } from '../text/count-of.js';

/** Codes shown; the rest are counted in one line (as on the terminal). */
const CODES_SHOWN = 12;
/** Checks whose warnings are shown; the rest are counted in one line. */
const CHECKS_SHOWN = 8;
/** Portfolios shown per code; the rest are counted in one line (as on the terminal). */
const PORTFOLIOS_SHOWN = 6;
/** Longest reason, title or detail line in a chat message, in characters. */
const LINE_LENGTH = 300;
/** Detail lines shown in a chat message; the rest are counted. */
const DETAILS_SHOWN = 20;
/** Longest retry command shown: a long portfolio list is still worth copying whole. */
const COMMAND_LENGTH = 2_000;
/**
 * Slack's limit on a section's (and a context element's) text. Our own escaping (`&amp;`…) can
 * lengthen a text after it was cut, so every block text is cut again, here, last.
 */
const SLACK_TEXT_LIMIT = 3_000;
/** Slack truncates a message's `text` past 40,000 characters; cut it ourselves, at a line, a little before. */
const SLACK_MESSAGE_LIMIT = 38_000;
/** Longest message text in the JSON form. */
const JSON_MESSAGE_LENGTH = 1_000;
/**
 * Failure groups listed in the JSON form; `groupsOmitted` counts the rest. Groups grow with
 * codes × portfolios, and a receiver may refuse a body of megabytes.
 */
const JSON_GROUPS = 200;

const COUNT_LABELS: readonly (readonly [keyof AlertSummary['counts'], string])[] = [
  ['loaded', 'loaded'],
  ['warned', 'loaded with warnings'],
  ['unchanged', 'unchanged'],
  ['noData', 'no data'],
  ['failed', 'failed'],
  ['notAttempted', 'not attempted'],
  ['missing', 'missing'],
];

/**
 * The body of a run's or night's one alert: `slack` gives `{ text, blocks }` within Slack's limits,
 * `json` the summary's fields. Hazard: outside text passes {@link printableText} and Slack's `&`,
 * `<`, `>` are escaped, or an upstream's message could mention `<!channel>` or forge a link.
 */
export function alertBody(summary: AlertSummary, format: AlertFormat): Record<string, unknown> {
  return format === 'json' ? jsonBody(summary) : slackBody(summary);
}

function slackBody(summary: AlertSummary): Record<string, unknown> {
  const title = `*${slack(summary.title, LINE_LENGTH)}*`;
  const origin = summary.origin && `deployment ${slack(summary.origin.deployment, LINE_LENGTH)} · host ${slack(summary.origin.host, LINE_LENGTH)}`;
  const counts = countsLine(summary.counts);
  const failed = failureSections(summary);
  const warned = warningSections(summary);
  const sections = [...failed.sections, ...warned.sections];
  const moreCodes = [failed.moreCodes, warned.moreChecks].filter((line) => line !== undefined).join('\n') || undefined;
  const allDetails = summary.details ?? [];
  const details = allDetails.slice(0, DETAILS_SHOWN).map((line) => slack(line, LINE_LENGTH));
  if (allDetails.length > DETAILS_SHOWN) details.push(`… ${allDetails.length - DETAILS_SHOWN} more lines`);
  const retry = summary.retryCommand === undefined ? undefined : `Re-run what failed: ${commandText(summary.retryCommand)}`;

  // What must survive a cut (the title, the counts, what was left out, the retry command) is kept
  // whole; only the failure sections give way, from the end, so the text stays under Slack's limit.
  const head = [title, ...(origin ? [origin] : []), ...(counts ? [counts] : [])];
  const tail = [...(moreCodes ? [moreCodes] : []), ...details, ...(retry ? [retry] : [])];
  const budget = SLACK_MESSAGE_LIMIT - [...head, ...tail].reduce((total, line) => total + line.length + 1, 0);
  const text = [...head, ...cutLines(sections.flat(), budget), ...tail].join('\n');

  // At most 3 + CODES_SHOWN + CHECKS_SHOWN + 1 + 1 + 1 blocks: within Slack's 50.
  const blocks: Record<string, unknown>[] = head.map(section);
  for (const lines of sections) blocks.push(section(lines.join('\n')));
  if (moreCodes) blocks.push(section(moreCodes));
  if (details.length > 0) blocks.push(section(details.join('\n')));
  if (retry) blocks.push({ type: 'context', elements: [{ type: 'mrkdwn', text: cut(retry, SLACK_TEXT_LIMIT) }] });
  return { text, blocks };
}

/** One mrkdwn section per failure code: its count, its biggest portfolios, each with its reason. */
function failureSections(summary: AlertSummary): { sections: string[][]; moreCodes: string | undefined } {
  if (summary.failures.total === 0) return { sections: [], moreCodes: undefined };
  const codes = new Map<string, FailureGroup[]>();
  for (const group of summary.failures.groups) codes.set(group.code, [...(codes.get(group.code) ?? []), group]);
  const sections: string[][] = [];
  for (const [code, groups] of [...codes].slice(0, CODES_SHOWN)) {
    const lines = [`*${slack(code, LINE_LENGTH)}*: ${countOf(sum(groups), 'slice')}`];
    for (const group of groups.slice(0, PORTFOLIOS_SHOWN)) {
      const examples = group.examples.map((example) => `${example.slice.reportType} ${example.slice.reportDate}`).join(', ');
      lines.push(`• portfolio ${group.portfolioId}: ${countOf(group.slices, 'slice')}${examples ? `, e.g. ${slack(examples, LINE_LENGTH)}` : ''}`);
      // The reason as the ledger has it (`CODE: what to check`), once per group.
      const first = group.examples[0];
      if (first) lines.push(`      ${slack(`${code}: ${first.message}`, LINE_LENGTH)}`);
    }
    if (groups.length > PORTFOLIOS_SHOWN) {
      const rest = groups.slice(PORTFOLIOS_SHOWN);
      lines.push(`• … ${rest.length} more portfolios (${countOf(sum(rest), 'slice')})`);
    }
    sections.push(lines);
  }
  const rest = [...codes.values()].slice(CODES_SHOWN).flat();
  return { sections, moreCodes: rest.length > 0 ? `… ${codes.size - CODES_SHOWN} more codes (${countOf(sum(rest), 'slice')})` : undefined };
}

/** One mrkdwn section per check: its slices loaded with warnings, its biggest portfolios with the values measured, each with what was found. */
function warningSections(summary: AlertSummary): { sections: string[][]; moreChecks: string | undefined } {
  const warnings = summary.warnings;
  if (!warnings || warnings.groups.length === 0) return { sections: [], moreChecks: undefined };
  const checks = new Map<string, WarningGroup[]>();
  for (const group of warnings.groups) checks.set(group.check, [...(checks.get(group.check) ?? []), group]);
  const sections: string[][] = [];
  for (const [check, groups] of [...checks].slice(0, CHECKS_SHOWN)) {
    const lines = [`*Loaded with warnings: ${slack(check, LINE_LENGTH)}*: ${countOf(sumWarned(groups), 'slice')}`];
    for (const group of groups.slice(0, PORTFOLIOS_SHOWN)) {
      const examples = group.examples.map((example) => `${example.slice.reportType} ${example.slice.reportDate}`).join(', ');
      lines.push(`• portfolio ${group.portfolioId}: ${countOf(group.slices, 'slice')}, ${describeMeasured(group)}${examples ? `, e.g. ${slack(examples, LINE_LENGTH)}` : ''}`);
      const first = group.examples[0];
      if (first) lines.push(`      ${slack(first.message, LINE_LENGTH)}`);
    }
    if (groups.length > PORTFOLIOS_SHOWN) {
      const rest = groups.slice(PORTFOLIOS_SHOWN);
      lines.push(`• … ${rest.length} more portfolios (${countOf(sumWarned(rest), 'slice')})`);
    }
    sections.push(lines);
  }
  const rest = [...checks.values()].slice(CHECKS_SHOWN).flat();
  return { sections, moreChecks: rest.length > 0 ? `… ${checks.size - CHECKS_SHOWN} more checks warned (${countOf(sumWarned(rest), 'slice')})` : undefined };
}

function countsLine(counts: AlertSummary['counts']): string | undefined {
  const parts = COUNT_LABELS.filter(([key]) => counts[key] !== undefined).map(([key, label]) => `${counts[key]} ${label}`);
  return parts.length > 0 ? parts.join(' · ') : undefined;
}

/** The retry command as code, so it is copied whole; a backtick in it (a quoted path) would end the code span early. */
function commandText(command: string): string {
  const text = slack(command, COMMAND_LENGTH);
  return text.includes('`') ? text : `\`${text}\``;
}

function section(text: string): Record<string, unknown> {
  return { type: 'section', text: { type: 'mrkdwn', text: cut(text, SLACK_TEXT_LIMIT) } };
}

/**
 * Text from outside as it may appear in a Slack message: printable, `&`, `<`, `>` escaped, and at
 * most `maxLength` characters as sent (escaping can make a text five times longer).
 */
function slack(text: string, maxLength: number): string {
  return cut(printableText(String(text), maxLength).replaceAll('&', '&amp;').replaceAll('<', '&lt;').replaceAll('>', '&gt;'), maxLength);
}

/** Cuts already-escaped text without splitting an entity such as `&amp;`. */
function cut(text: string, maxLength: number): string {
  if (text.length <= maxLength) return text;
  let end = maxLength - 1;
  const amp = text.lastIndexOf('&', end);
  if (amp !== -1 && amp > end - 5 && !text.slice(amp, end).includes(';')) end = amp;
  return `${text.slice(0, end)}…`;
}

/** The first lines that fit in `maxLength` characters (newlines counted), and a line saying the rest was cut. */
function cutLines(lines: readonly string[], maxLength: number): string[] {
  const marker = '… (more failures cut: the message is too long for one alert)';
  let used = 0;
  for (const [index, line] of lines.entries()) {
    used += line.length + 1;
    if (used > maxLength - marker.length - 1) return [...lines.slice(0, index), marker];
  }
  return [...lines];
}

function jsonBody(summary: AlertSummary): Record<string, unknown> {
  const counts: Record<string, number> = {};
  for (const [key] of COUNT_LABELS) if (summary.counts[key] !== undefined) counts[key] = summary.counts[key];
  const groups = summary.failures.groups.slice(0, JSON_GROUPS).map((group) => ({
    code: printableText(group.code, LINE_LENGTH),
    portfolioId: group.portfolioId,
    slices: group.slices,
    examples: group.examples.map((example) => ({
      portfolioId: example.slice.portfolioId,
      reportType: printableText(example.slice.reportType, LINE_LENGTH),
      reportDate: printableText(example.slice.reportDate, LINE_LENGTH),
      message: printableText(example.message, JSON_MESSAGE_LENGTH),
    })),
  }));
  const omitted = summary.failures.groups.length - groups.length;
  const warningGroups = (summary.warnings?.groups ?? []).slice(0, JSON_GROUPS).map((group) => ({
    check: printableText(group.check, LINE_LENGTH),
    portfolioId: group.portfolioId,
    slices: group.slices,
    measured: { min: finite(group.measured.min), max: finite(group.measured.max) },
    threshold: finite(group.threshold),
    examples: group.examples.map((example) => ({
      portfolioId: example.slice.portfolioId,
      reportType: printableText(example.slice.reportType, LINE_LENGTH),
      reportDate: printableText(example.slice.reportDate, LINE_LENGTH),
      measured: finite(example.measured),
      message: printableText(example.message, JSON_MESSAGE_LENGTH),
    })),
  }));
  const warningsOmitted = (summary.warnings?.groups.length ?? 0) - warningGroups.length;
  return {
    source: 'report-sync',
    kind: summary.kind,
    ...(summary.origin ? { host: printableText(summary.origin.host, LINE_LENGTH), deployment: printableText(summary.origin.deployment, LINE_LENGTH) } : {}),
    title: printableText(summary.title, LINE_LENGTH),
    // An invalid Date would make toISOString throw; an alert still goes out without its time.
    at: Number.isNaN(summary.at.getTime()) ? null : summary.at.toISOString(),
    counts,
    failures: { total: summary.failures.total, groups, ...(omitted > 0 ? { groupsOmitted: omitted } : {}) },
    ...(summary.warnings && summary.warnings.slices > 0
      ? { warnings: { slices: summary.warnings.slices, groups: warningGroups, ...(warningsOmitted > 0 ? { groupsOmitted: warningsOmitted } : {}) } }
      : {}),
    details: (summary.details ?? []).map((line) => printableText(line, JSON_MESSAGE_LENGTH)),
    ...(summary.retryCommand === undefined ? {} : { retryCommand: printableText(summary.retryCommand, COMMAND_LENGTH) }),
  };
}

function sum(groups: readonly FailureGroup[]): number {
  return groups.reduce((total, group) => total + group.slices, 0);
}

function sumWarned(groups: readonly WarningGroup[]): number {
  return groups.reduce((total, group) => total + group.slices, 0);
}

/** A number JSON can carry: NaN and the infinities (never measured, but never trusted either) become null. */
function finite(value: number): number | null {
  return Number.isFinite(value) ? value : null;
}
