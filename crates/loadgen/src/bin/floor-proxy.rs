//! `floor-proxy`: the least an HTTP proxy on the facade's stack can do, as the
//! floor of `scripts/bench-facade.sh`.
//!
//! It forwards every request's method, path, body and `Content-Type` to one
//! upstream over pooled keep-alive connections (hyper's client, as reqwest
//! uses it) and streams the upstream's answer back unchanged: no parsing, no
//! routing, no logging. Whatever the bridge spends beyond this per request is
//! its own work; what this spends is the price of the hop (two sockets, the
//! HTTP codecs, the runtime) on the machine at hand.
//!
//! `floor-proxy --upstream http://127.0.0.1:PORT` listens on 127.0.0.1, on
//! `--port` (0: any free port), and prints `listening on ADDR` on stderr.

use std::convert::Infallible;
use std::net::SocketAddr;
use std::process::ExitCode;

use http::uri::{PathAndQuery, Uri};
use http::{HeaderValue, Request, Response, StatusCode, header};
use http_body_util::{BodyExt, Full, combinators::BoxBody};
use hyper::body::{Bytes, Incoming};
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::{TokioExecutor, TokioIo};
use tokio::net::TcpListener;

type Upstream = Client<HttpConnector, Incoming>;
type AnswerBody = BoxBody<Bytes, hyper::Error>;

fn main() -> ExitCode {
    match parse_args(std::env::args().skip(1)) {
        Ok((upstream, port)) => match serve(upstream, port) {
            Ok(()) => ExitCode::SUCCESS,
            Err(message) => {
                eprintln!("floor-proxy: {message}");
                ExitCode::from(2)
            }
        },
        Err(message) => {
            eprintln!(
                "floor-proxy: {message}\nusage: floor-proxy --upstream http://127.0.0.1:PORT [--port N]"
            );
            ExitCode::from(2)
        }
    }
}

fn parse_args(mut args: impl Iterator<Item = String>) -> Result<(Uri, u16), String> {
    let mut upstream = None;
    let mut port = 0;
    while let Some(flag) = args.next() {
        let value = args.next().ok_or_else(|| format!("{flag} needs a value"))?;
        match flag.as_str() {
            "--upstream" => {
                let uri: Uri = value
                    .parse()
                    .map_err(|err| format!("--upstream {value:?}: {err}"))?;
                if uri.scheme_str() != Some("http") || uri.authority().is_none() {
                    return Err(format!("--upstream {value:?}: an http:// URL is needed"));
                }
                upstream = Some(uri);
            }
            "--port" => {
                port = value
                    .parse()
                    .map_err(|err| format!("--port {value:?}: {err}"))?;
            }
            other => return Err(format!("unknown option {other:?}")),
        }
    }
    Ok((upstream.ok_or("--upstream is required")?, port))
}

fn serve(upstream: Uri, port: u16) -> Result<(), String> {
    // Sized by the CPUs this process may use, like the bridge's runtime.
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|err| format!("cannot start the async runtime: {err}"))?;
    runtime.block_on(async move {
        let listener = TcpListener::bind(SocketAddr::from(([127, 0, 0, 1], port)))
            .await
            .map_err(|err| format!("cannot listen on 127.0.0.1:{port}: {err}"))?;
        let address = listener
            .local_addr()
            .map_err(|err| format!("no local address: {err}"))?;
        eprintln!("listening on {address}");
        let client: Upstream = Client::builder(TokioExecutor::new()).build_http();
        loop {
            let (stream, _) = listener
                .accept()
                .await
                .map_err(|err| format!("accept failed: {err}"))?;
            let _ = stream.set_nodelay(true);
            let client = client.clone();
            let upstream = upstream.clone();
            tokio::spawn(async move {
                let service =
                    service_fn(move |request| forward(client.clone(), upstream.clone(), request));
                // A client that goes away mid-request is not this tool's error.
                let _ = http1::Builder::new()
                    .serve_connection(TokioIo::new(stream), service)
                    .await;
            });
        }
    })
}

async fn forward(
    client: Upstream,
    upstream: Uri,
    request: Request<Incoming>,
) -> Result<Response<AnswerBody>, Infallible> {
    let (parts, body) = request.into_parts();
    let mut target = upstream.into_parts();
    target.path_and_query = parts
        .uri
        .path_and_query()
        .cloned()
        .or_else(|| Some(PathAndQuery::from_static("/")));
    let Ok(uri) = Uri::from_parts(target) else {
        return Ok(failure("cannot build the upstream URI"));
    };
    let mut outbound = Request::builder().method(parts.method).uri(uri);
    if let Some(kind) = parts.headers.get(header::CONTENT_TYPE) {
        outbound = outbound.header(header::CONTENT_TYPE, kind);
    }
    let Ok(outbound) = outbound.body(body) else {
        return Ok(failure("cannot build the upstream request"));
    };
    match client.request(outbound).await {
        Ok(answer) => Ok(answer.map(BodyExt::boxed)),
        Err(err) => Ok(failure(&format!("upstream failed: {err}"))),
    }
}

fn failure(message: &str) -> Response<AnswerBody> {
    let body = Full::new(Bytes::from(message.to_owned()))
        .map_err(|never| match never {})
        .boxed();
    let mut response = Response::new(body);
    *response.status_mut() = StatusCode::BAD_GATEWAY;
    response
        .headers_mut()
        .insert(header::CONTENT_TYPE, HeaderValue::from_static("text/plain"));
    response
}
