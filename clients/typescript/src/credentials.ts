import {
  credentials as grpcCredentials,
  InterceptingCall,
  Metadata,
  status,
  type ChannelCredentials,
  type ChannelOptions,
  type Interceptor,
} from "@grpc/grpc-js";
import type { TokenProvider } from "./common/options";

/** TLS settings; every field is optional, and `{}` means TLS verified against the system's roots. */
export interface TlsOptions {
  /** PEM of the authorities to trust instead of the system's roots (e.g. `readFileSync("ca.pem")`). */
  ca?: Buffer | string;
  /** PEM of the client certificate chain, for servers that require mTLS; needs `key`. */
  cert?: Buffer | string;
  /** PEM of the client certificate's private key; needs `cert`. */
  key?: Buffer | string;
  /** The name the server's certificate must carry, when it is not the host of the address. */
  serverName?: string;
}

/** What the client options say about the connection and the caller's credentials. */
export interface ConnectionOptions {
  credentials?: ChannelCredentials;
  channelOptions?: ChannelOptions;
  apiKey?: string;
  tokenProvider?: TokenProvider;
  tls?: TlsOptions;
}

/** How both service stubs of a client are built: channel credentials and grpc-js client options. */
export interface Connection {
  channelCredentials: ChannelCredentials;
  clientOptions: ChannelOptions & { interceptors: Interceptor[] };
}

function pem(value: Buffer | string | undefined): Buffer | null {
  return value === undefined ? null : Buffer.from(value);
}

function channelCredentials(options: ConnectionOptions): ChannelCredentials {
  const { credentials, tls } = options;
  if (credentials !== undefined && tls !== undefined) throw new TypeError("give either credentials or tls, not both");
  if (credentials !== undefined) return credentials;
  if (tls === undefined) return grpcCredentials.createInsecure();
  if ((tls.cert === undefined) !== (tls.key === undefined)) throw new TypeError("tls.cert and tls.key go together");
  return grpcCredentials.createSsl(pem(tls.ca), pem(tls.key), pem(tls.cert));
}

/** The server name override: the certificate is checked against it, and it is sent as SNI and `:authority`. */
function serverNameOptions(tls: TlsOptions | undefined): ChannelOptions {
  const serverName = tls?.serverName;
  return serverName === undefined ? {} : { "grpc.ssl_target_name_override": serverName, "grpc.default_authority": serverName };
}

/**
 * An interceptor that gives every call (unary and streaming) per-call credentials: the provider is
 * asked for a token at the start of each call and sent as `authorization: Bearer <token>`. Per-call
 * credentials are used because grpc-js refuses to compose call credentials with a plaintext channel,
 * and askuser's default listener is plaintext on loopback.
 */
function bearerInterceptor(provider: TokenProvider): Interceptor {
  const bearer = grpcCredentials.createFromMetadataGenerator((_call, callback) => {
    Promise.resolve()
      .then(provider)
      .then(
        (token) => {
          const metadata = new Metadata();
          metadata.set("authorization", `Bearer ${token}`);
          callback(null, metadata);
        },
        // UNAUTHENTICATED rather than grpc-js's UNKNOWN: the call failed for want of credentials.
        (error: unknown) => callback(Object.assign(new Error(`the token provider failed: ${String(error)}`), { code: status.UNAUTHENTICATED })),
      );
  });
  return (options, nextCall) =>
    new InterceptingCall(nextCall({ ...options, credentials: options.credentials?.compose(bearer) ?? bearer }));
}

function tokenProvider(options: ConnectionOptions): TokenProvider | undefined {
  const { apiKey, tokenProvider } = options;
  if (apiKey !== undefined && tokenProvider !== undefined) throw new TypeError("give either apiKey or tokenProvider, not both");
  return apiKey !== undefined ? () => apiKey : tokenProvider;
}

/** Checks the options and turns them into what the stubs are built with. */
export function connection(options: ConnectionOptions): Connection {
  const provider = tokenProvider(options);
  return {
    channelCredentials: channelCredentials(options),
    clientOptions: {
      ...options.channelOptions,
      ...serverNameOptions(options.tls),
      interceptors: provider === undefined ? [] : [bearerInterceptor(provider)],
    },
  };
}
