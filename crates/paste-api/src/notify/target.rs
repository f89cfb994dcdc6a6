//! Where a notification may go. A subscription's URL is checked when it is
//! made (`422 target-not-allowed`, with the reason) and again at every
//! delivery, because DNS answers change: the deliverer's resolver
//! ([`GuardedResolver`]) drops every address the policy refuses, so a name
//! that later resolves to a private address reaches nothing.
//!
//! The policy: `https` only, no user or password in the URL, and only
//! public unicast addresses — unless the tenant's `notify_private_targets`
//! is on, which also allows plain `http` (a LAN, a test suite). Redirects
//! are never followed (the clients are built that way in `deliver.rs`).

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};

use reqwest::dns::{Addrs, Name, Resolve, Resolving};
use url::Url;

/// Checks `raw`'s form: an absolute `https` URL (or `http` with
/// `allow_private`) with a host and no user, password or fragment. A host
/// that is an IP address must be allowed too. Answers the reason when not.
pub(crate) fn check_url(raw: &str, allow_private: bool) -> Result<Url, String> {
    let url = Url::parse(raw.trim()).map_err(|e| format!("the URL cannot be read ({e})"))?;
    match url.scheme() {
        "https" => {}
        "http" if allow_private => {}
        "http" => {
            return Err(
                "notification targets must be https URLs (plain http only where the tenant allows private targets)"
                    .into(),
            );
        }
        other => {
            return Err(format!(
                "notification targets must be https URLs, not {other}:"
            ));
        }
    }
    if !url.username().is_empty() || url.password().is_some() {
        return Err(
            "a notification URL may not carry a user or password: the URL is shown to every writer of the review who lists subscriptions"
                .into(),
        );
    }
    if url.fragment().is_some() {
        return Err("a notification URL may not have a fragment (#…)".into());
    }
    match url.host() {
        None => return Err("the URL has no host".into()),
        Some(url::Host::Ipv4(ip)) => allowed_ip(IpAddr::V4(ip), allow_private)?,
        Some(url::Host::Ipv6(ip)) => allowed_ip(IpAddr::V6(ip), allow_private)?,
        Some(url::Host::Domain(name)) => {
            if !allow_private && is_local_name(name) {
                return Err(format!(
                    "{name} is a local name; notification targets must be public (or the tenant must allow private targets)"
                ));
            }
        }
    }
    Ok(url)
}

/// Resolves `url`'s host and checks every address (at subscribe time:
/// a name that resolves to nothing, or to a refused address, is refused).
pub(crate) async fn check_resolved(url: &Url, allow_private: bool) -> Result<(), String> {
    let Some(url::Host::Domain(name)) = url.host() else {
        return Ok(()); // an address, checked by check_url
    };
    let port = url.port_or_known_default().unwrap_or(443);
    let addrs: Vec<SocketAddr> = tokio::time::timeout(
        std::time::Duration::from_secs(5),
        tokio::net::lookup_host((name, port)),
    )
    .await
    .map_err(|_| format!("{name} did not resolve within 5 seconds"))?
    .map_err(|e| format!("{name} does not resolve ({e})"))?
    .collect();
    if addrs.is_empty() {
        return Err(format!("{name} resolves to no address"));
    }
    for addr in &addrs {
        allowed_ip(addr.ip(), allow_private)
            .map_err(|why| format!("{name} resolves to {}: {why}", addr.ip()))?;
    }
    Ok(())
}

fn allowed_ip(ip: IpAddr, allow_private: bool) -> Result<(), String> {
    if allow_private || is_public(ip) {
        Ok(())
    } else {
        Err(format!(
            "{ip} is not a public address (private, loopback, link-local or reserved); notification targets must be public unless the tenant allows private targets"
        ))
    }
}

/// Names that are this machine or its network whatever DNS says.
fn is_local_name(name: &str) -> bool {
    let name = name.trim_end_matches('.').to_ascii_lowercase();
    name == "localhost"
        || name.ends_with(".localhost")
        || name.ends_with(".local")
        || name.ends_with(".internal")
        || name.ends_with(".home.arpa")
}

/// Whether `ip` is a public unicast address: not loopback, private,
/// link-local, shared (CGNAT), multicast, broadcast, documentation,
/// benchmarking or reserved; IPv6 forms that carry an IPv4 address
/// (mapped, compatible, NAT64, 6to4) are judged by that address.
pub(crate) fn is_public(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => is_public_v4(v4),
        IpAddr::V6(v6) => is_public_v6(v6),
    }
}

fn is_public_v4(ip: Ipv4Addr) -> bool {
    let [a, b, c, _] = ip.octets();
    !(a == 0                                   // "this" network
        || a == 10                             // private
        || a == 127                            // loopback
        || (a == 100 && (64..128).contains(&b)) // shared address space (CGNAT)
        || (a == 169 && b == 254)              // link-local
        || (a == 172 && (16..32).contains(&b)) // private
        || (a == 192 && b == 0 && c == 0)      // IETF protocol assignments
        || (a == 192 && b == 0 && c == 2)      // documentation
        || (a == 192 && b == 88 && c == 99)    // 6to4 relay anycast
        || (a == 192 && b == 168)              // private
        || (a == 198 && (18..20).contains(&b)) // benchmarking
        || (a == 198 && b == 51 && c == 100)   // documentation
        || (a == 203 && b == 0 && c == 113)    // documentation
        || a >= 224) // multicast, reserved, broadcast
}

fn is_public_v6(ip: Ipv6Addr) -> bool {
    let s = ip.segments();
    if let Some(v4) = embedded_v4(ip) {
        return is_public_v4(v4);
    }
    !(ip.is_unspecified()
        || ip.is_loopback()
        || (s[0] & 0xfe00) == 0xfc00   // unique local
        || (s[0] & 0xffc0) == 0xfe80   // link-local
        || (s[0] & 0xffc0) == 0xfec0   // site-local (deprecated)
        || (s[0] & 0xff00) == 0xff00   // multicast
        || (s[0] == 0x2001 && s[1] == 0x0db8) // documentation
        || (s[0] == 0x2001 && s[1] < 0x0200) // Teredo, benchmarking, ORCHID…
        || s[0] == 0x0100 && s[1..4] == [0, 0, 0] // discard-only
        || (s[0] & 0xe000) != 0x2000) // outside global unicast 2000::/3
}

/// The IPv4 address an IPv6 address stands for, where it stands for one.
fn embedded_v4(ip: Ipv6Addr) -> Option<Ipv4Addr> {
    let s = ip.segments();
    let o = ip.octets();
    if let Some(v4) = ip.to_ipv4_mapped() {
        return Some(v4); // ::ffff:a.b.c.d
    }
    if s[..6] == [0, 0, 0, 0, 0, 0] && !(s[6] == 0 && s[7] <= 1) {
        return Some(Ipv4Addr::new(o[12], o[13], o[14], o[15])); // ::a.b.c.d
    }
    if s[0] == 0x0064 && s[1] == 0xff9b && s[2..6] == [0, 0, 0, 0] {
        return Some(Ipv4Addr::new(o[12], o[13], o[14], o[15])); // NAT64
    }
    if s[0] == 0x2002 {
        return Some(Ipv4Addr::new(o[2], o[3], o[4], o[5])); // 6to4
    }
    None
}

/// The deliverer's DNS resolver: the system's answers, without the
/// addresses the policy refuses. A name left with none fails to connect.
#[derive(Clone, Copy, Debug)]
pub(crate) struct GuardedResolver;

impl Resolve for GuardedResolver {
    fn resolve(&self, name: Name) -> Resolving {
        let host = name.as_str().to_owned();
        Box::pin(async move {
            if is_local_name(&host) {
                return Err(format!("{host} is a local name").into());
            }
            let addrs: Addrs = Box::new(public_addrs(&host).await?.into_iter());
            Ok(addrs)
        })
    }
}

/// `host`'s public addresses; an error when it has none.
async fn public_addrs(host: &str) -> Result<Vec<SocketAddr>, String> {
    let addrs: Vec<SocketAddr> = tokio::net::lookup_host((host, 0))
        .await
        .map_err(|e| format!("{host} does not resolve ({e})"))?
        .filter(|a| is_public(a.ip()))
        .collect();
    if addrs.is_empty() {
        return Err(format!("{host} resolves to no public address"));
    }
    Ok(addrs)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Addresses and names a notification may never reach with the
    /// setting off: the SSRF corpus.
    const REFUSED: &[&str] = &[
        "http://example.com/hook",
        "ftp://example.com/hook",
        "https://user:pass@example.com/hook",
        "https://example.com/hook#frag",
        "https://127.0.0.1/hook",
        "https://127.1.2.3/",
        "https://0.0.0.0/",
        "https://10.0.0.1/",
        "https://172.16.5.4/",
        "https://172.31.255.255/",
        "https://192.168.1.1/",
        "https://169.254.169.254/latest/meta-data/",
        "https://100.64.0.1/",
        "https://198.18.0.1/",
        "https://224.0.0.1/",
        "https://255.255.255.255/",
        "https://[::1]/",
        "https://[::]/",
        "https://[fe80::1]/",
        "https://[fc00::1]/",
        "https://[fd12:3456::1]/",
        "https://[ff02::1]/",
        "https://[::ffff:127.0.0.1]/",
        "https://[::ffff:10.0.0.1]/",
        "https://[::ffff:169.254.169.254]/",
        "https://[::127.0.0.1]/",
        "https://[64:ff9b::a9fe:a9fe]/",
        "https://[2002:7f00:1::]/",
        "https://[2001:db8::1]/",
        "https://localhost/",
        "https://LOCALHOST./",
        "https://app.localhost/",
        "https://printer.local/",
        "https://metadata.google.internal/",
        "https://2130706433/",   // 127.0.0.1 as one number
        "https://0x7f.1/",       // 127.0.0.1 in hex parts
        "https://017700000001/", // 127.0.0.1 in octal
    ];

    #[test]
    fn the_ssrf_corpus_is_refused_with_the_setting_off() {
        for raw in REFUSED {
            assert!(check_url(raw, false).is_err(), "{raw} was allowed");
        }
    }

    #[test]
    fn public_https_urls_pass_and_the_setting_opens_the_rest() {
        for raw in [
            "https://hooks.example.com/planshare?x=1",
            "https://93.184.215.14/hook",
            "https://[2606:4700:4700::1111]/hook",
            "https://ntfy.sh/my-topic",
        ] {
            assert!(check_url(raw, false).is_ok(), "{raw}");
        }
        for raw in [
            "http://127.0.0.1:8080/hook",
            "https://[::1]/",
            "http://printer.local/",
        ] {
            assert!(check_url(raw, true).is_ok(), "{raw}");
        }
        // Even then: no credentials, only http(s).
        assert!(check_url("https://a:b@10.0.0.1/", true).is_err());
        assert!(check_url("file:///etc/passwd", true).is_err());
    }

    #[test]
    fn embedded_ipv4_is_judged_by_the_ipv4_address() {
        assert!(is_public("::ffff:93.184.215.14".parse().unwrap()));
        assert!(!is_public("::ffff:192.168.0.1".parse().unwrap()));
        assert!(is_public("2002:5db8:d70e::1".parse().unwrap()));
        assert!(!is_public("2002:c0a8:0001::1".parse().unwrap()));
    }

    #[tokio::test]
    async fn names_that_resolve_to_loopback_are_refused() {
        // `localhost` is refused by name; an IP literal never resolves.
        let url = Url::parse("https://localhost.:8443/").unwrap();
        assert!(check_url(url.as_str(), false).is_err());
        // A name the resolver maps to loopback only is refused after
        // resolution (the deliverer's resolver filters the same way).
        let resolved = check_resolved(&Url::parse("https://localhost/").unwrap(), false).await;
        assert!(resolved.is_err(), "{resolved:?}");
        // The deliverer's resolver: by name, and by what the name resolves to.
        let guarded = GuardedResolver.resolve("localhost".parse().unwrap()).await;
        assert!(guarded.is_err());
        let filtered = public_addrs("localhost").await;
        assert!(filtered.is_err(), "{filtered:?}");
    }
}
