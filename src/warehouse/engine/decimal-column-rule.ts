/**
 * Which declared types of a report table's decimal column keep every value the row writer lets
 * through (`RowWriter.decimals`). A column rebuilt by hand as a narrower type (MySQL's
 * `DECIMAL(10,2)`, Postgres's `numeric(10,2)` or `double precision`) would round what is loaded
 * into it without an error, so the schema check names such a column instead of loading into it.
 */
export interface DecimalColumnRule {
  /** The type the migrations give a decimal column, as its catalogue writes it. */
  readonly declared: string;
  /** Whether a column of `type` (as the catalogue writes it, lower case) keeps every such value. */
  keeps(type: string): boolean;
  /** How to give `table`.`column` back the type the migrations gave it, for the schema check's message. */
  repair(table: string, column: string): string;
}
