// One streamed turn, read through the generated client's SSE reader, made strictly single-shot.
//
// hey-api's SSE client retries a failed stream forever by default, re-sending the request (with Last-Event-ID),
// and ends the stream silently on a refusal, dropping its body. A chat request may have run a turn by the time
// anything fails, so here: `sseMaxRetryAttempts: 1`, and a fetch that refuses to send twice as a second guard; a
// refusal's body becomes the typed error (errors.ts), thrown before any event; whatever ended the stream early
// (an abort, a lost connection, an error chunk) is thrown, never swallowed.
import { CopilotStreamError, errorFromResponse } from './errors.js';
import type { Client } from './generated/client/index.js';

/** What a frame's parsed `data` became: an event to yield, or the end of the stream (`[DONE]`). */
export const END: unique symbol = Symbol('end of stream');
export type Frame<T> = (data: unknown) => T | typeof END;

export interface StreamOptions {
  /** Aborting it stops the request (the server stops the turn) and makes the iteration throw `signal.reason`. */
  signal?: AbortSignal;
}

export interface StreamRequest<T> {
  client: Client;
  /** The operation's path template (the generated SDK's `url`) and its parameters. */
  url: string;
  path: Record<string, string>;
  body: unknown;
  frame: Frame<T>;
  signal?: AbortSignal | undefined;
}

/**
 * The events of one turn, read once with `for await`. The request is sent when the iteration starts; a refusal
 * (401, 404, 409...) is thrown as its typed error before any event. Leaving the loop early closes the connection.
 */
export class EventStream<T> implements AsyncIterable<T> {
  readonly #request: StreamRequest<T>;
  #started = false;
  #response: Response | undefined;

  constructor(request: StreamRequest<T>) {
    this.#request = request;
  }

  /** The answer's response, once its headers have arrived (after the first event). */
  get response(): Response | undefined {
    return this.#response;
  }

  /** The turn's session as the channels tell it (`X-Copilot-Session-Id`), once the answer has begun. */
  get sessionId(): string | undefined {
    return this.#response?.headers.get('x-copilot-session-id') ?? undefined;
  }

  async *[Symbol.asyncIterator](): AsyncGenerator<T, void, undefined> {
    if (this.#started) {
      // reading it again would send the turn again
      throw new Error('an EventStream is read once: start a new call for a new turn');
    }
    this.#started = true;
    const { client, url, path, body, frame, signal } = this.#request;
    const stop = new AbortController(); // ours, so that leaving the loop early can close the connection too
    const onAbort = () => stop.abort(signal?.reason);
    if (signal?.aborted) stop.abort(signal.reason);
    signal?.addEventListener('abort', onAbort, { once: true });

    const baseFetch = client.getConfig().fetch ?? globalThis.fetch;
    let sent = false;
    let failure: unknown;
    const fetchOnce = async (input: RequestInfo | URL, init?: RequestInit): Promise<Response> => {
      if (sent) throw new CopilotStreamError('refused to send the request a second time', 'retry_refused');
      sent = true;
      const response = await baseFetch(input, init);
      if (!response.ok) throw await errorFromResponse(response);
      this.#response = response;
      return response;
    };
    try {
      const { stream } = await client.sse.post<{ 200: unknown }>({
        url,
        path,
        body,
        headers: { 'Content-Type': 'application/json', Accept: 'text/event-stream' },
        security: [{ scheme: 'bearer', type: 'http' }],
        signal: stop.signal,
        fetch: fetchOnce,
        sseMaxRetryAttempts: 1, // its default retries forever, re-sending the message
        onSseError: (error) => {
          failure ??= error;
        },
      });
      for await (const data of stream) {
        const event = frame(data);
        if (event === END) break;
        yield event;
      }
    } finally {
      signal?.removeEventListener('abort', onAbort);
      stop.abort(); // whatever the ending: a reader that stopped early must not leave the turn streaming
    }
    if (signal?.aborted) throw signal.reason;
    if (failure !== undefined) {
      if (failure instanceof Error && this.#response === undefined) throw failure; // a refusal, or no connection
      throw new CopilotStreamError('the stream broke off before its end', 'stream_interrupted', undefined, {
        cause: failure,
      });
    }
  }
}

/** A frame of a stream whose every `data` is an event's JSON (the GNS3 stream, AG-UI, OpenAI Responses). */
export function jsonEvents<T>(data: unknown): T {
  if (typeof data !== 'object' || data === null) {
    const shown = String(data).slice(0, 200);
    throw new CopilotStreamError(`a frame's data is not a JSON object: ${shown}`, 'invalid_frame', data);
  }
  return data as T;
}

/** A frame of a stream that ends with `data: [DONE]` (the UI message stream, OpenAI Chat Completions). */
export function jsonEventsUntilDone<T>(data: unknown): T | typeof END {
  return data === '[DONE]' ? END : jsonEvents<T>(data);
}
