import { describe, expect, it } from 'vitest';

import { ConfigError, loadConfig } from '../../src/config';
import { hashPassword, verifyPassword } from '../../src/domain/passwords';

describe('password hashing cost', () => {
  it('is 2^15 by default and configurable upwards with PASSWORD_HASH_COST', () => {
    expect(loadConfig({}).passwordHashCost).toBe(15);
    expect(loadConfig({ PASSWORD_HASH_COST: '16' }).passwordHashCost).toBe(16);
  });

  it('has a floor no configuration can go under', () => {
    for (const cost of ['14', '10', '0']) {
      expect(() => loadConfig({ PASSWORD_HASH_COST: cost }), cost).toThrow(ConfigError);
      expect(() => loadConfig({ PASSWORD_HASH_COST: cost }), cost).toThrow(/PASSWORD_HASH_COST/u);
    }
  });

  it('hashes with the given cost and verifies against the cost stored in the hash', async () => {
    const low = await hashPassword('correct horse battery staple', 10);
    expect(low.split('$').slice(0, 4)).toEqual(['scrypt', String(2 ** 10), '8', '1']);
    expect(await verifyPassword('correct horse battery staple', low)).toBe(true);
    expect(await verifyPassword('wrong horse battery staple', low)).toBe(false);
    const production = await hashPassword('correct horse battery staple', loadConfig({}).passwordHashCost);
    expect(production.split('$')[1]).toBe(String(2 ** 15));
    expect(await verifyPassword('correct horse battery staple', production)).toBe(true);
  });
});
