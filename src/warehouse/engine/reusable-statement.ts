import { CompiledQuery, type Compilable } from 'kysely';

/** Stands in for a named value while a statement is compiled, so its parameter can be found again. */
class Slot {
  constructor(readonly name: string) {}
}

/**
 * A statement Kysely builds and compiles once, then runs again with new values. Building and
 * compiling a small statement costs more CPU than SQLite takes to run it, and a slice runs
 * four or five of them; the SQL text never changes from slice to slice, only the values do.
 *
 * The statement is compiled with a placeholder object for each value, and the position of each
 * placeholder among Kysely's parameters is kept, so the values go back in exactly where Kysely
 * put them (whatever order it chose): the SQL text is Kysely's, and every value stays a parameter.
 * Parameters that are not placeholders (constants in the statement) are kept as compiled.
 */
export class ReusableStatement<Values extends object> {
  readonly #sql: string;
  /** Per parameter: the name of its value, or undefined for a constant. */
  readonly #names: readonly (keyof Values | undefined)[];
  readonly #constants: readonly unknown[];

  private constructor(sql: string, names: readonly (keyof Values | undefined)[], constants: readonly unknown[]) {
    this.#sql = sql;
    this.#names = names;
    this.#constants = constants;
  }

  /**
   * Compiles the statement `build` makes from `names`' values.
   * @param names every value the statement takes
   * @param build builds the statement; it receives placeholders, which it must only pass to Kysely as values
   */
  static compile<Values extends object>(names: readonly (keyof Values & string)[], build: (values: Values) => Compilable): ReusableStatement<Values> {
    const slots = Object.fromEntries(names.map((name) => [name, new Slot(name)])) as unknown as Values;
    const compiled = build(slots).compile();
    const parameterNames = compiled.parameters.map((parameter) => (parameter instanceof Slot ? (parameter.name as keyof Values) : undefined));
    const constants = compiled.parameters.map((parameter) => (parameter instanceof Slot ? undefined : parameter));
    return new ReusableStatement<Values>(compiled.sql, parameterNames, constants);
  }

  /** The statement with `values` as its parameters, ready for `executeQuery` on a Kysely instance or transaction. */
  with<Row = unknown>(values: Values): CompiledQuery<Row> {
    const names = this.#names;
    const parameters: unknown[] = new Array(names.length);
    for (let i = 0; i < names.length; i += 1) {
      const name = names[i];
      parameters[i] = name === undefined ? this.#constants[i] : values[name];
    }
    return CompiledQuery.raw(this.#sql, parameters) as CompiledQuery<Row>;
  }
}
