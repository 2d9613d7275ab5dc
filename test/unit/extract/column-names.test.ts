import { describe, expect, it } from 'vitest';
import { toColumnName } from '../../../src/extract/column-names.js';

describe('toColumnName', () => {
  it.each([
    ['closeMarketValue', 'close_market_value'],
    ['Closing Fx', 'closing_fx'],
    ['ISIN', 'isin'],
    ['Effective Date', 'effective_date'],
    ['indexId', 'index_id'],
    ['securityISIN', 'security_isin'],
    ['closingFX', 'closing_fx'],
    ['XMLHttpRequest', 'xml_http_request'],
    ['index_value', 'index_value'],
    [' Currency ', 'currency'],
    ['Index-Shares', 'index_shares'],
    ['\uFEFFEffective Date', 'effective_date'],
    ['field2Value', 'field2_value'],
    ['Security  Ticker', 'security_ticker'],
  ])('%j → %s', (source, expected) => {
    expect(toColumnName(source)).toBe(expected);
  });
});
