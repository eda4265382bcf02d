//! `--webhook-deny-private`: which addresses a client's webhook may not reach, judged on the
//! addresses a name resolves to when the delivery is made. The resolver below is the HTTP
//! client's own, so the address checked is the address connected to (no window for a name to
//! rebind between the check and the connection); URLs with an address for a host never reach a
//! resolver and are checked before the request.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};

use reqwest::dns::{Addrs, Name, Resolve, Resolving};

/// The one `last_error` of a refused destination: no detail of the address or of a connection
/// attempt, so that listing deliveries tells nothing of what listens inside.
pub const REFUSED: &str = "the destination is not allowed: it is (or its name resolves to) a \
     loopback, private, link-local or metadata address (--webhook-deny-private)";

/// A refused destination, as the resolver fails a request with.
#[derive(Debug, thiserror::Error)]
#[error("{REFUSED}")]
pub struct Refused;

/// Whether `ip` is an address a client's webhook may not reach: loopback, unspecified, private
/// (RFC 1918, unique local), shared (RFC 6598, Alibaba's metadata), link-local (every cloud's
/// 169.254.169.254), benchmarking, reserved, multicast and broadcast, also inside IPv6 forms
/// that carry an IPv4 address (mapped, compatible, NAT64, 6to4).
pub fn is_private(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(ip) => is_private_v4(ip),
        IpAddr::V6(ip) => is_private_v6(ip),
    }
}

fn is_private_v4(ip: Ipv4Addr) -> bool {
    let [a, b, ..] = ip.octets();
    ip.is_loopback()
        || ip.is_private()
        || ip.is_link_local()
        || ip.is_unspecified()
        || ip.is_broadcast()
        || ip.is_multicast()
        || ip.is_documentation()
        || a == 0
        || (a == 100 && (64..128).contains(&b))
        || (a == 198 && (b == 18 || b == 19))
        || a >= 240
        || (a == 192 && b == 0 && ip.octets()[2] == 0)
}

fn is_private_v6(ip: Ipv6Addr) -> bool {
    let segments = ip.segments();
    let embedded_v4 = |high: usize| {
        let [a, b] = segments[high].to_be_bytes();
        let [c, d] = segments[high + 1].to_be_bytes();
        Ipv4Addr::new(a, b, c, d)
    };
    if let Some(v4) = ip.to_ipv4_mapped() {
        return is_private_v4(v4);
    }
    // IPv4-compatible (::a.b.c.d) and NAT64 (64:ff9b::a.b.c.d) carry the address at the end.
    if segments[..6] == [0; 6] || segments[..6] == [0x64, 0xff9b, 0, 0, 0, 0] {
        return is_private_v4(embedded_v4(6));
    }
    // 6to4 (2002:a.b.c.d::) carries it after the prefix.
    if segments[0] == 0x2002 {
        return is_private_v4(embedded_v4(1));
    }
    ip.is_loopback()
        || ip.is_unspecified()
        || ip.is_multicast()
        || (segments[0] & 0xfe00) == 0xfc00
        || (segments[0] & 0xffc0) == 0xfe80
        || (segments[0] & 0xffc0) == 0xfec0
        || (segments[0] == 0x2001 && segments[1] == 0x0db8)
}

/// Resolves names with the system's resolver and keeps only the addresses a client's webhook may
/// reach; none left is [`Refused`].
#[derive(Debug, Default)]
pub struct PublicOnly;

impl Resolve for PublicOnly {
    fn resolve(&self, name: Name) -> Resolving {
        let host = name.as_str().to_owned();
        Box::pin(async move {
            let addresses: Vec<SocketAddr> = tokio::net::lookup_host((host.as_str(), 0))
                .await?
                .filter(|address| !is_private(address.ip()))
                .collect();
            if addresses.is_empty() {
                return Err(Box::new(Refused) as Box<dyn std::error::Error + Send + Sync>);
            }
            Ok(Box::new(addresses.into_iter()) as Addrs)
        })
    }
}

/// Whether a request failed because its destination was refused.
pub fn was_refused(error: &reqwest::Error) -> bool {
    let mut source: Option<&(dyn std::error::Error + 'static)> = Some(error);
    while let Some(cause) = source {
        if cause.is::<Refused>() {
            return true;
        }
        source = cause.source();
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn private_loopback_link_local_and_metadata_addresses_are_private() {
        for private in [
            "127.0.0.1",
            "127.1.2.3",
            "10.0.0.1",
            "172.16.0.1",
            "192.168.1.1",
            "169.254.169.254",
            "100.100.100.200",
            "0.0.0.0",
            "255.255.255.255",
            "::1",
            "::",
            "fe80::1",
            "fd00:ec2::254",
            "::ffff:127.0.0.1",
            "::ffff:169.254.169.254",
            "64:ff9b::a9fe:a9fe",
            "2002:7f00:1::",
        ] {
            let ip: IpAddr = private.parse().expect("address");
            assert!(is_private(ip), "{private}");
        }
        for public in [
            "93.184.215.14",
            "8.8.8.8",
            "2606:4700::1111",
            "::ffff:8.8.8.8",
        ] {
            let ip: IpAddr = public.parse().expect("address");
            assert!(!is_private(ip), "{public}");
        }
    }

    #[tokio::test]
    async fn a_name_that_resolves_to_loopback_is_refused() {
        let name: Name = "localhost".parse().expect("name");
        let refused = PublicOnly.resolve(name).await;
        assert!(refused.is_err_and(|error| error.is::<Refused>()));
    }
}
