// Shared plumbing of the real-client drivers (tests/channels/node_clients.py runs them):
// one JSON document on stdin {"cases": [...]}, one JSON document on stdout {"results": [...]}, one result per
// case, in order. A case's failure is data (its result says ok: false); only a broken driver exits non-zero.

export async function readStdinJson() {
  const chunks = [];
  for await (const chunk of process.stdin) chunks.push(chunk);
  return JSON.parse(Buffer.concat(chunks).toString("utf8"));
}

/** An error as data: name and message, plus the fields the clients attach (status, payload, cause...). */
export function errorInfo(error) {
  if (error == null) return null;
  if (!(error instanceof Error)) return { name: typeof error, message: String(error) };
  const info = { name: error.name, class: error.constructor?.name ?? null, message: error.message };
  for (const key of ["status", "payload", "statusCode", "responseBody", "chunkType", "chunkId"]) {
    if (error[key] !== undefined) info[key] = error[key];
  }
  if (error.cause !== undefined) info.cause = errorInfo(error.cause);
  return info;
}

/** A plain JSON copy (drops functions, undefined, and the non-JSON values some events carry). */
export function plain(value) {
  return value === undefined ? null : JSON.parse(JSON.stringify(value));
}

export function headersObject(headers) {
  const out = {};
  headers.forEach((value, key) => {
    out[key] = value;
  });
  return out;
}

/** Runs `handle` on every case of stdin, one after the other, and writes the results. */
export async function runCases(handle) {
  const { cases } = await readStdinJson();
  const results = [];
  for (const testCase of cases) {
    try {
      results.push(await handle(testCase));
    } catch (error) {
      results.push({ ok: false, error: errorInfo(error), driverError: true });
    }
  }
  process.stdout.write(JSON.stringify({ results }));
}
