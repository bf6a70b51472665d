// The importer's error class and its checks of options, shared by the importer and the command
// line: whole numbers, and base URLs (an origin, never with credentials, which messages would echo).

/** An import that stopped: `status` is the HTTP status (0 for a network failure), `result` the
 * counts up to the stop. */
export class ImportError extends Error {
  constructor(message, { status = 0, code = "failed", result, cause } = {}) {
    super(message, cause ? { cause } : undefined);
    this.name = "ImportError";
    this.status = status;
    this.code = code;
    this.result = result;
  }
}

/** `url` with any user name and password masked, for messages. */
export function redactUrl(url) {
  return String(url).replace(/\/\/[^/@\s]*@/g, "//***@");
}

/** Refuses a base URL that is not an http(s) origin, or that holds credentials (they would be
 * echoed in messages and are not sent anyway). */
export function checkBaseUrl(value) {
  let url;
  try {
    url = new URL(String(value));
  } catch {
    throw new ImportError(`the base URL \`${redactUrl(value)}\` is not a URL; pass the server's origin, such as http://127.0.0.1:8080`, { code: "bad_options" });
  }
  if (url.username || url.password) {
    throw new ImportError(`the base URL ${redactUrl(value)} holds credentials; pass the server's origin alone, and the credentials as username and secret (or token)`, { code: "bad_options" });
  }
  if (url.protocol !== "http:" && url.protocol !== "https:") {
    throw new ImportError(`the base URL \`${value}\` is not http or https; pass the server's origin, such as http://127.0.0.1:8080`, { code: "bad_options" });
  }
  return String(value);
}

/** A whole number option (`what` names it), or `fallback` when absent. */
export function wholeOption(value, what, { min = 0, max = Number.MAX_SAFE_INTEGER, fallback } = {}) {
  if (value == null) return fallback;
  const n = typeof value === "string" && value.trim() !== "" ? Number(value) : value;
  if (typeof n !== "number" || !Number.isInteger(n) || n < min || n > max) {
    throw new ImportError(`\`${what}\` must be a whole number from ${min}${max === Number.MAX_SAFE_INTEGER ? " up" : ` to ${max}`}, got ${JSON.stringify(value) ?? String(value)}`, { code: "bad_options" });
  }
  return n;
}

