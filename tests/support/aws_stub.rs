//! A local stand-in for the AWS endpoints the functions call (Secrets
//! Manager and Bedrock Runtime), reached through the real SDK by pointing
//! `AWS_ENDPOINT_URL` at it. It records every request and answers with
//! whatever the test's handler says.

use serde_json::Value;
use std::sync::{Arc, Mutex};
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::{TcpListener, TcpStream};

/// One request as the stub saw it.
#[derive(Debug, Clone)]
pub struct StubRequest {
    pub path: String,
    /// `x-amz-target` (JSON 1.1 services such as Secrets Manager).
    pub target: Option<String>,
    pub body: Value,
}

impl StubRequest {
    /// Whether this is a Secrets Manager `GetSecretValue` call.
    pub fn is_secret(&self) -> bool {
        self.target.as_deref() == Some("secretsmanager.GetSecretValue")
    }

    /// The Bedrock model of an `InvokeModel` call (`/model/<id>/invoke`).
    pub fn model(&self) -> Option<String> {
        let rest = self.path.strip_prefix("/model/")?;
        let id = rest.strip_suffix("/invoke")?;
        Some(id.replace("%3A", ":").replace("%3a", ":"))
    }
}

/// The answer: status, content type and body.
pub struct StubReply {
    pub status: u16,
    pub content_type: &'static str,
    pub headers: Vec<(&'static str, String)>,
    pub body: String,
    /// How long the stub waits before it answers.
    pub delay: std::time::Duration,
}

impl StubReply {
    /// A JSON 1.1 answer (Secrets Manager).
    pub fn json11(body: &Value) -> Self {
        Self {
            status: 200,
            content_type: "application/x-amz-json-1.1",
            headers: Vec::new(),
            body: body.to_string(),
            delay: std::time::Duration::ZERO,
        }
    }

    /// A plain JSON answer (Bedrock InvokeModel).
    pub fn json(body: &Value) -> Self {
        Self {
            status: 200,
            content_type: "application/json",
            headers: Vec::new(),
            body: body.to_string(),
            delay: std::time::Duration::ZERO,
        }
    }

    /// A restJson1 service error (Bedrock), typed by `x-amzn-ErrorType`.
    pub fn error(status: u16, error_type: &str) -> Self {
        Self {
            status,
            content_type: "application/json",
            headers: vec![("x-amzn-errortype", error_type.to_string())],
            body: r#"{"message":"stub failure detail"}"#.into(),
            delay: std::time::Duration::ZERO,
        }
    }

    /// The same answer, `delay` later.
    pub fn after(mut self, delay: std::time::Duration) -> Self {
        self.delay = delay;
        self
    }
}

type Handler = dyn Fn(&StubRequest) -> StubReply + Send + Sync;

#[derive(Clone)]
pub struct AwsStub {
    pub url: String,
    requests: Arc<Mutex<Vec<StubRequest>>>,
}

impl AwsStub {
    pub async fn start(
        handler: impl Fn(&StubRequest) -> StubReply + Send + Sync + 'static,
    ) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let stub = AwsStub {
            url: format!("http://{}", listener.local_addr().unwrap()),
            requests: Arc::default(),
        };
        let handler: Arc<Handler> = Arc::new(handler);
        let s = stub.clone();
        tokio::spawn(async move {
            while let Ok((conn, _)) = listener.accept().await {
                tokio::spawn(serve(conn, s.clone(), handler.clone()));
            }
        });
        stub
    }

    pub fn requests(&self) -> Vec<StubRequest> {
        self.requests.lock().unwrap().clone()
    }
}

async fn serve(conn: TcpStream, stub: AwsStub, handler: Arc<Handler>) {
    let mut conn = BufReader::new(conn);
    loop {
        let mut line = String::new();
        if conn.read_line(&mut line).await.unwrap_or(0) == 0 {
            return;
        }
        let path = line.split_whitespace().nth(1).unwrap_or("/").to_string();
        let mut length = 0usize;
        let mut target = None;
        loop {
            let mut h = String::new();
            if conn.read_line(&mut h).await.unwrap_or(0) == 0 {
                return;
            }
            let h = h.trim_end();
            if h.is_empty() {
                break;
            }
            if let Some((k, v)) = h.split_once(':') {
                match k.trim().to_ascii_lowercase().as_str() {
                    "content-length" => length = v.trim().parse().unwrap_or(0),
                    "x-amz-target" => target = Some(v.trim().to_string()),
                    _ => {}
                }
            }
        }
        let mut body = vec![0; length];
        if conn.read_exact(&mut body).await.is_err() {
            return;
        }
        let request = StubRequest {
            path,
            target,
            body: serde_json::from_slice(&body).unwrap_or(Value::Null),
        };
        stub.requests.lock().unwrap().push(request.clone());
        let reply = handler(&request);
        tokio::time::sleep(reply.delay).await;
        let mut head = format!(
            "HTTP/1.1 {} Stub\r\ncontent-type: {}\r\ncontent-length: {}\r\nx-amzn-requestid: stub\r\n",
            reply.status,
            reply.content_type,
            reply.body.len()
        );
        for (k, v) in &reply.headers {
            head.push_str(&format!("{k}: {v}\r\n"));
        }
        head.push_str("\r\n");
        let w = conn.get_mut();
        if w.write_all(head.as_bytes()).await.is_err()
            || w.write_all(reply.body.as_bytes()).await.is_err()
        {
            return;
        }
    }
}
