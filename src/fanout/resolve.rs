//! Endpoint arguments to URLs: each is a URL or `host:port`, and a name that resolves to
//! several addresses (a Kubernetes headless Service) becomes one endpoint per address.

use super::error::Error;

/// Expands endpoint arguments into URLs: each is a URL or `host:port`; a name that resolves
/// to several addresses (a Kubernetes headless Service) becomes one endpoint per address.
pub async fn resolve(endpoints: &[String]) -> Result<Vec<String>, Error> {
    let mut urls = Vec::new();
    for endpoint in endpoints {
        let (scheme, rest) = match endpoint.split_once("://") {
            Some((scheme, rest)) => (scheme, rest),
            None => ("http", endpoint.as_str()),
        };
        let host_port = rest.trim_end_matches('/');
        let addrs: Vec<_> = tokio::net::lookup_host(host_port)
            .await
            .map_err(|source| Error::Resolve {
                endpoint: endpoint.clone(),
                source,
            })?
            .collect();
        let is_literal = host_port.parse::<std::net::SocketAddr>().is_ok();
        if addrs.len() <= 1 || is_literal || scheme == "https" {
            urls.push(format!("{scheme}://{host_port}"));
        } else {
            urls.extend(addrs.iter().map(|a| format!("{scheme}://{a}")));
        }
    }
    urls.sort();
    urls.dedup();
    if urls.is_empty() {
        return Err(Error::NoEndpoints);
    }
    Ok(urls)
}
