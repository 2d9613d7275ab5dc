import { readFileSync } from 'node:fs';
import { ConfigError } from '../../errors/sync-error.js';

/**
 * The refusal of a DATABASE_URL parameter that its scheme's driver would not use, naming the TLS
 * parameters to write instead (`use`): a misspelt one would leave the connection unencrypted.
 */
export function unknownUrlParameter(location: string, name: string, scheme: string, use: string): ConfigError {
  return new ConfigError(`DATABASE_URL (${location}) has the parameter ${name}, which a ${scheme}:// URL does not take: use ${use} for TLS, or remove it`);
}

/** The PEM file a DATABASE_URL parameter names, read now: a path that cannot be read is the URL's mistake. */
export function readUrlFile(location: string, parameter: string, file: string): Buffer {
  try {
    return readFileSync(file);
  } catch (error) {
    throw new ConfigError(`DATABASE_URL (${location}) has ${parameter}=${file}, which cannot be read (${(error as Error).message}): give the path of its PEM file`, {
      cause: error,
    });
  }
}
