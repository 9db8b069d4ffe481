// Names the contract checks: an extension's name (a DNS label; one is reserved for the agent's heartbeat) and
// a condition type (PascalCase, as Kubernetes condition types are). Messages quote the input, capped.

import { quoteInput } from './text.ts';

/** Extension names are DNS labels; this one is reserved for the agent's own heartbeat Lease. */
export const RESERVED_EXTENSION_NAME = 'nodecare-agent';
const DNS_LABEL = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;
/** A condition type: PascalCase, at most 63 characters. */
export const PASCAL_CASE = /^[A-Z][A-Za-z0-9]{0,62}$/;

export function validateExtensionName(name: string): string | undefined {
  if (name.length === 0 || name.length > 63 || !DNS_LABEL.test(name)) {
    return `name ${quoteInput(name)}: expected a DNS label (lowercase letters, digits and '-', at most 63 characters)`;
  }
  if (name === RESERVED_EXTENSION_NAME)
    return `name ${quoteInput(name)}: reserved for the agent's own heartbeat`;
  return undefined;
}
