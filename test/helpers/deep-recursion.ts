import { sql } from 'kysely';

/**
 * Put before a MariaDB statement whose recursive query counts past `max_recursive_iterations`
 * (1,000 on the test server): the rows the tests seed in the database count to millions. MariaDB's
 * `SET STATEMENT … FOR` sets it for that statement alone, whichever pooled connection runs it.
 */
export const DEEP_RECURSION = sql.raw('set statement max_recursive_iterations = 100000000 for');
