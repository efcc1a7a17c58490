/**
 * Logger options: access tokens, codes and secrets never reach the log, whether they travel in headers,
 * query strings or bodies (bodies are never logged).
 */
import type { FastifyServerOptions, FastifyRequest } from 'fastify';

const SECRET_PARAMETERS = /^(access_token|refresh_token|id_token|code|code_verifier|client_secret|password|device_code|subject_token|actor_token|token|assertion|client_assertion|state|user_code)$/i;

/** `/x?access_token=abc&a=1` → `/x?access_token=[REDACTED]&a=1`. */
export function redactUrl(url: string): string {
  const q = url.indexOf('?');
  if (q === -1) return url;
  const parts = url
    .slice(q + 1)
    .split('&')
    .map((pair) => {
      const eq = pair.indexOf('=');
      const key = decodeURIComponentSafe(eq === -1 ? pair : pair.slice(0, eq));
      return SECRET_PARAMETERS.test(key) && eq !== -1 ? `${pair.slice(0, eq)}=[REDACTED]` : pair;
    });
  return `${url.slice(0, q)}?${parts.join('&')}`;
}

function decodeURIComponentSafe(s: string): string {
  try {
    return decodeURIComponent(s.replace(/\+/g, ' '));
  } catch {
    return s;
  }
}

export function loggerOptions(level: string, stream?: NodeJS.WritableStream): FastifyServerOptions['logger'] {
  return {
    level,
    ...(stream ? { stream } : {}),
    redact: {
      paths: ['req.headers.authorization', 'req.headers.cookie', 'headers.authorization', 'headers.cookie', '*.password', '*.client_secret'],
      censor: '[REDACTED]',
    },
    serializers: {
      req(request: FastifyRequest) {
        return {
          method: request.method,
          url: redactUrl(request.url),
          remoteAddress: request.ip,
        };
      },
      res(reply: { statusCode: number }) {
        return { statusCode: reply.statusCode };
      },
    },
  };
}
