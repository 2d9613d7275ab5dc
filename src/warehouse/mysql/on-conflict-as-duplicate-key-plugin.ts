import {
  ColumnUpdateNode,
  InsertQueryNode,
  OnDuplicateKeyNode,
  RawNode,
  ReferenceNode,
  sql,
  type KyselyPlugin,
  type OperationNode,
  type PluginTransformQueryArgs,
  type PluginTransformResultArgs,
  type QueryResult,
  type RootOperationNode,
  type UnknownRow,
} from 'kysely';

/** `excluded.<column>` in a raw fragment: the row an upsert proposed, as Postgres and SQLite name it. */
const EXCLUDED_IN_RAW = /\bexcluded\.([a-z_][a-z0-9_]*)/gi;

/**
 * The warehouse's upserts are written once, the way SQLite and Postgres say them (`on conflict
 * (key) do update set c = excluded.c`); MySQL says `on duplicate key update c = values(c)`. This
 * plugin, on the MySQL warehouse's Kysely only, rewrites the one into the other as each statement
 * is compiled, so the ledger's code never asks which dialect it has. The conflict's columns are
 * dropped: every upsert of report-sync's targets its table's primary key, the only unique key it
 * could meet (`report_loads_load_id` is never written twice).
 */
export class OnConflictAsDuplicateKeyPlugin implements KyselyPlugin {
  transformQuery(args: PluginTransformQueryArgs): RootOperationNode {
    const { node } = args;
    if (!InsertQueryNode.is(node) || node.onConflict === undefined) return node;
    const { onConflict } = node;
    if (onConflict.doNothing === true || onConflict.updates === undefined || onConflict.updateWhere !== undefined) {
      throw new Error('OnConflictAsDuplicateKeyPlugin rewrites only `on conflict (…) do update set …` with no where: a bug in the statement');
    }
    const updates = onConflict.updates.map((update) => ColumnUpdateNode.create(update.column, proposedAsValues(update.value)));
    return { ...node, onConflict: undefined, onDuplicateKey: OnDuplicateKeyNode.create(updates) } as InsertQueryNode;
  }

  async transformResult(args: PluginTransformResultArgs): Promise<QueryResult<UnknownRow>> {
    return args.result;
  }
}

function proposedAsValues(value: OperationNode): OperationNode {
  if (ReferenceNode.is(value) && value.table?.table.identifier.name === 'excluded' && value.column.kind === 'ColumnNode') {
    return sql`values(${sql.id(value.column.column.name)})`.toOperationNode();
  }
  if (RawNode.is(value)) {
    return { ...value, sqlFragments: value.sqlFragments.map((fragment) => fragment.replace(EXCLUDED_IN_RAW, 'values($1)')) } as RawNode;
  }
  return value;
}
