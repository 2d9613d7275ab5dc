import type { Kysely } from 'kysely';
import type { RepeatedValues } from '../../quality/slice-check-tally.js';
import type { ReportDefinition } from '../../reports/report-definition.js';
import type { ReportLoadsRow, Warehouse } from '../engine/warehouse-schema.js';

/** A slice as the warehouse's columns name it. */
type SliceKey = Pick<ReportLoadsRow, 'portfolio_id' | 'report_type' | 'report_date'>;

/**
 * The rows just written that repeat a value of `column`, and the first repeat, counted by the
 * database in the slice's rows: asked only when the tally saw a repeated hash, so an ordinary
 * file costs no query and a collision no false refusal.
 */
export async function countRepeatedValues(trx: Kysely<Warehouse>, definition: ReportDefinition, key: SliceKey, column: string): Promise<RepeatedValues> {
  const db = trx as unknown as Kysely<Record<string, Record<string, string | number | null>>>;
  let rows = db.selectFrom(definition.table).where('portfolio_id', '=', key.portfolio_id).where('report_date', '=', key.report_date);
  if (definition.storesReportType) rows = rows.where('report_type', '=', key.report_type);
  const groups = rows
    .select((eb) => [eb.ref(column).as('value'), eb.fn.countAll<number | string>().as('rows')])
    .groupBy(column)
    .having((eb) => eb.fn.countAll(), '>', 1);
  const total = await db
    .selectFrom(groups.as('repeated'))
    .select((eb) => eb.fn.sum<number | string | null>(eb('rows', '-', 1)).as('repeats'))
    .executeTakeFirst();
  const repeats = Number(total?.repeats ?? 0);
  if (repeats === 0 || !definition.storesLineNumber) return { rows: repeats };
  // The first row that repeats an earlier one: the smallest second line number of any value.
  const first = await rows
    .innerJoin(
      db
        .selectFrom(definition.table)
        .where('portfolio_id', '=', key.portfolio_id)
        .where('report_date', '=', key.report_date)
        .$if(definition.storesReportType, (query) => query.where('report_type', '=', key.report_type))
        .select((eb) => [eb.ref(column).as('first_value'), eb.fn.min('line_number').as('first_line')])
        .groupBy(column)
        .as('firsts'),
      (join) => join.onRef(`firsts.first_value`, '=', column as never),
    )
    .whereRef('line_number', '>', 'firsts.first_line')
    .select((eb) => [eb.ref(column).as('value'), eb.ref('line_number').as('line')])
    .orderBy('line_number')
    .limit(1)
    .executeTakeFirst();
  return { rows: repeats, example: first ? { value: String(first.value), row: Number(first.line) } : undefined };
}
