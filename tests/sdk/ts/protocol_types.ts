// The SDK's channel event types, generated from the official JSON Schemas, against the protocols' own TypeScript
// types (type-checked with the driver, tests/sdk/test_typescript_sdk.py; nothing runs).
import type { AGUIEvent } from '@ag-ui/core';
import type { UIMessageChunk } from 'ai';

import type { AgUiEvent, UiMessageChunk } from '../../../sdk/typescript/src/index.js';

// Every UI chunk the SDK yields is a chunk the `ai` package takes (e.g. by `readUIMessageStream`). The converse
// fails only where `ai`'s JSON values admit `undefined` inside `providerMetadata`, which JSON cannot carry.
export const uiChunkForAi = (chunk: UiMessageChunk): UIMessageChunk => chunk;

// Every event `@ag-ui/core` types is one the SDK's AgUiEvent accepts. The converse fails only because
// `@ag-ui/core` types `type` as a TypeScript enum, to which no string literal is assignable.
export const agUiEventForSdk = (event: AGUIEvent): AgUiEvent => event;
