/**
 * Row → record mappers shared by the SQL stores (SQLite and PostgreSQL name and type these
 * columns alike; partners differ — JSON text vs JSONB, 0/1 vs boolean — and map apart).
 */
import type { AuditEntry, McpConnection, Session, User } from './types.js';

type Row = Record<string, unknown>;

export function toUser(r: Row): User {
  return {
    id: r.id as string,
    partnerId: r.partner_id as string,
    sub: r.sub as string,
    email: r.email as string,
    name: (r.name as string | null) ?? null,
    givenName: (r.given_name as string | null) ?? null,
    familyName: (r.family_name as string | null) ?? null,
    createdAt: r.created_at as number,
    lastSeenAt: r.last_seen_at as number,
  };
}

export function toSession(r: Row): Session {
  return {
    id: r.id as string,
    userId: r.user_id as string,
    partnerId: r.partner_id as string,
    currentJti: r.current_jti as string,
    previousJti: (r.previous_jti as string | null) ?? null,
    rotatedAt: r.rotated_at as number,
    createdAt: r.created_at as number,
    expiresAt: r.expires_at as number,
    revokedAt: (r.revoked_at as number | null) ?? null,
  };
}

export function toMcpConnection(r: Row): McpConnection {
  return {
    userId: r.user_id as string,
    providerId: r.provider_id as string,
    accessToken: (r.access_token as string | null) ?? null,
    refreshToken: (r.refresh_token as string | null) ?? null,
    pendingState: (r.pending_state as string | null) ?? null,
    pendingUrl: (r.pending_url as string | null) ?? null,
    updatedAt: r.updated_at as number,
  };
}

export function toAuditEntry(r: Row): AuditEntry {
  return {
    at: Number(r.at), requestId: r.request_id as string, partnerId: r.partner_id as string, userId: r.user_id as string,
    providerId: r.provider_id as string, accountId: (r.account_id as string | null) ?? null, operation: r.operation as string,
    targetId: (r.target_id as string | null) ?? null, targetIdAfter: (r.target_id_after as string | null) ?? null,
    nameBefore: (r.name_before as string | null) ?? null, nameAfter: (r.name_after as string | null) ?? null,
    bytes: r.bytes === null || r.bytes === undefined ? null : Number(r.bytes), result: r.result as string,
  };
}
