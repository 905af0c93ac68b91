// Typed errors: every refusal the contract documents becomes an instance of the class for its status, carrying the
// contract's error body (`message`, `code`), so callers branch on the class (or `status`) and on `code`.
import type { ErrorBody, OpenAiErrorBody, ValidationErrorBody } from './generated/types.gen.js';

export type { ErrorBody, ValidationErrorBody };

/** An HTTP answer outside 2xx: the status, the contract's error body and the response it came in. */
export class CopilotApiError extends Error {
  override readonly name: string = 'CopilotApiError';
  readonly status: number;
  readonly body: ErrorBody;
  /** The machine-readable reason (`body.code`), e.g. `session_busy`. */
  readonly code: string;
  /** The body as received: the contract's `ErrorBody`, OpenAI's `{error: {...}}` on the OpenAI channel, or text. */
  readonly raw: unknown;
  readonly response: Response | undefined;

  constructor(status: number, body: ErrorBody, raw: unknown = body, response?: Response) {
    super(`HTTP ${status} ${body.code}: ${body.message}`);
    this.status = status;
    this.body = body;
    this.code = body.code;
    this.raw = raw;
    this.response = response;
  }
}

/** 400: no LLM configuration (`llm_not_configured`) or a body that is not JSON the server can take (`invalid_json`). */
export class BadRequestError extends CopilotApiError {
  override readonly name = 'BadRequestError';
  declare readonly status: 400;
}
/** 401: no valid token, or a refused login (`unauthorized`). */
export class UnauthorizedError extends CopilotApiError {
  override readonly name = 'UnauthorizedError';
  declare readonly status: 401;
}
/** 403: no access to the project (`project_access_denied`) or the project is not opened (`project_not_opened`). */
export class ForbiddenError extends CopilotApiError {
  override readonly name = 'ForbiddenError';
  declare readonly status: 403;
}
/** 404: an unknown project (`project_not_found`), session (`session_not_found`), user or configuration. */
export class NotFoundError extends CopilotApiError {
  override readonly name = 'NotFoundError';
  declare readonly status: 404;
}
/** 409: the session's previous turn is still running (`session_busy`), or a project name in use. */
export class ConflictError extends CopilotApiError {
  override readonly name = 'ConflictError';
  declare readonly status: 409;
}
/** 413: the body is larger than the server's limit (`payload_too_large`). */
export class PayloadTooLargeError extends CopilotApiError {
  override readonly name = 'PayloadTooLargeError';
  declare readonly status: 413;
}
/** 422: invalid input (`validation_error`, the invalid fields in `details.errors`) or a refused channel request. */
export class ValidationError extends CopilotApiError {
  override readonly name = 'ValidationError';
  declare readonly status: 422;
  /** The field-level details, when the body is the contract's `ValidationErrorBody`. */
  get details(): ValidationErrorBody['details'] | undefined {
    const details = this.body.details;
    return details && Array.isArray(details['errors']) ? (details as ValidationErrorBody['details']) : undefined;
  }
}
/** 429: too many failed logins (`too_many_login_attempts`); `retryAfterSeconds` from `Retry-After`. */
export class TooManyRequestsError extends CopilotApiError {
  override readonly name = 'TooManyRequestsError';
  declare readonly status: 429;
  get retryAfterSeconds(): number | undefined {
    const value = this.response?.headers.get('retry-after');
    return value != null && /^\d+$/.test(value) ? Number(value) : undefined;
  }
}
/** 503: storage not writable (`storage_unavailable`) or the project's database unusable (`project_unavailable`). */
export class UnavailableError extends CopilotApiError {
  override readonly name = 'UnavailableError';
  declare readonly status: 503;
}

/** Every typed refusal, discriminated by `status`. */
export type CopilotHttpError =
  | BadRequestError
  | UnauthorizedError
  | ForbiddenError
  | NotFoundError
  | ConflictError
  | PayloadTooLargeError
  | ValidationError
  | TooManyRequestsError
  | UnavailableError;

type ErrorClass = new (status: number, body: ErrorBody, raw: unknown, response?: Response) => CopilotApiError;
const CLASSES: Record<number, ErrorClass> = {
  400: BadRequestError,
  401: UnauthorizedError,
  403: ForbiddenError,
  404: NotFoundError,
  409: ConflictError,
  413: PayloadTooLargeError,
  422: ValidationError,
  429: TooManyRequestsError,
  503: UnavailableError,
};

/**
 * A stream that began and then broke: an error chunk of the OpenAI channel (`{"error": {...}}`), a frame that is not
 * JSON, or a connection lost mid-stream. The turn may have run: it is never re-sent.
 */
export class CopilotStreamError extends Error {
  override readonly name = 'CopilotStreamError';
  readonly code: string;
  readonly raw: unknown;
  constructor(message: string, code: string, raw?: unknown, options?: { cause?: unknown }) {
    super(message, options);
    this.code = code;
    this.raw = raw;
  }
}

/** The typed error for a status and a parsed body (the contract's, OpenAI's, or anything else a proxy sent). */
export function apiError(status: number, raw: unknown, response?: Response): CopilotApiError {
  const Class = CLASSES[status] ?? CopilotApiError;
  return new Class(status, errorBody(status, raw, response), raw, response);
}

/** Reads a refused response's body and gives its typed error. */
export async function errorFromResponse(response: Response): Promise<CopilotApiError> {
  const text = await response.text().catch(() => '');
  let raw: unknown = text;
  try {
    raw = JSON.parse(text);
  } catch {
    // not JSON (a proxy's page): the body keeps the text as its message
  }
  return apiError(response.status, raw, response);
}

function errorBody(status: number, raw: unknown, response?: Response): ErrorBody {
  if (isErrorBody(raw)) {
    return raw;
  }
  if (isOpenAiErrorBody(raw)) {
    // The OpenAI channel refuses in OpenAI's shape with the contract's code (CHANNEL-005).
    const { message, code } = raw.error;
    return { message, code: typeof code === 'string' && code ? code : `http_${status}` };
  }
  const message = typeof raw === 'string' && raw.trim() ? raw.trim().slice(0, 500) : response?.statusText || 'error';
  return { message, code: `http_${status}` };
}

function isErrorBody(value: unknown): value is ErrorBody {
  if (typeof value !== 'object' || value === null) return false;
  const body = value as Record<string, unknown>;
  return typeof body['message'] === 'string' && typeof body['code'] === 'string';
}

function isOpenAiErrorBody(value: unknown): value is OpenAiErrorBody {
  if (typeof value !== 'object' || value === null) return false;
  const error = (value as Record<string, unknown>)['error'];
  if (typeof error !== 'object' || error === null) return false;
  return typeof (error as Record<string, unknown>)['message'] === 'string';
}
