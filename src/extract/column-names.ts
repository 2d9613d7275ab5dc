const MEMO_LIMIT = 10_000;
const memo = new Map<string, string>();

/**
 * Normalises a source field name to snake_case: `closeMarketValue` → `close_market_value`,
 * `Closing Fx` → `closing_fx`, `securityISIN` → `security_isin`. Digits stay with the word before
 * them. Called for every JSON key, so results are cached, up to a bound since keys come from files.
 */
export function toColumnName(sourceName: string): string {
  const known = memo.get(sourceName);
  if (known !== undefined) return known;
  const name = normalise(sourceName);
  if (memo.size < MEMO_LIMIT) memo.set(sourceName, name);
  return name;
}

function normalise(sourceName: string): string {
  return sourceName
    .replace(/^\uFEFF/, '')
    .replace(/([a-z\d])([A-Z])/g, '$1_$2') // closeMarket → close_Market, field2Value → field2_Value
    .replace(/([A-Z]+)([A-Z][a-z])/g, '$1_$2') // XMLHttp → XML_Http, securityISINCode → ISIN_Code
    .split(/[^A-Za-z\d]+/)
    .filter((part) => part !== '')
    .join('_')
    .toLowerCase();
}
