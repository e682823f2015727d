//! `email-alert`: a server's state change mailed to each mailer of the
//! backend's `mailers` section, over SMTP as HAProxy 2.6 sends it (HELO
//! with `myhostname`, one message whose subject and body are the log
//! line, QUIT), each mail within `timeout mail`. A mailer that fails or
//! answers out of turn loses that mail only; nothing is retried, as in
//! HAProxy.

use std::net::SocketAddr;
use std::sync::Arc;

use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::TcpStream;

use crate::config::mailers::Alerting;

/// Mails `line` (a state change's log line, told at syslog `level`) when
/// the backend's `email-alert level` lets it through.
pub(crate) fn alert(alerting: Option<&Arc<Alerting>>, level: u8, line: &str) {
    let Some(a) = alerting.filter(|a| level <= a.level) else {
        return;
    };
    // The line without its closing period, as HAProxy's alert text.
    let text = line.strip_suffix('.').unwrap_or(line).to_string();
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs() as i64);
    let date = crate::sys::time::strftime("%a, %d %b %Y %T %z (%Z)", now, true).unwrap_or_default();
    let message = format!(
        "From: {}\r\nTo: {}\r\nDate: {date}\r\nSubject: [HAProxy Alert] {text}\r\n\r\n{text}\r\n\r\n.\r\n",
        a.from, a.to
    );
    for &mailer in &a.mailers {
        let (a, message) = (a.clone(), message.clone());
        tokio::spawn(async move {
            let sent = tokio::time::timeout(a.timeout, send(mailer, &a, &message)).await;
            if !matches!(sent, Ok(Ok(()))) {
                tracing::debug!("email alert to {mailer} not sent: {sent:?}");
            }
        });
    }
}

/// Why a mail was not sent.
#[derive(Debug, thiserror::Error)]
enum MailError {
    #[error("{0}")]
    Io(#[from] std::io::Error),
    #[error("unexpected reply {0:?}")]
    Reply(String),
}

/// One SMTP dialogue: each command waits for its reply's code.
async fn send(mailer: SocketAddr, a: &Alerting, message: &str) -> Result<(), MailError> {
    let conn = TcpStream::connect(mailer).await?;
    let (rd, mut wr) = conn.into_split();
    let mut rd = BufReader::new(rd);
    expect(&mut rd, "220").await?;
    let steps = [
        (format!("HELO {}\r\n", a.hostname), "250"),
        (format!("MAIL FROM:<{}>\r\n", a.from), "250"),
        (format!("RCPT TO:<{}>\r\n", a.to), "250"),
        ("DATA\r\n".to_string(), "354"),
        (message.to_string(), "250"),
        ("QUIT\r\n".to_string(), "221"),
    ];
    for (command, code) in steps {
        wr.write_all(command.as_bytes()).await?;
        expect(&mut rd, code).await?;
    }
    Ok(())
}

/// Reads one reply (its continuation lines too) and checks its code.
async fn expect(
    rd: &mut BufReader<tokio::net::tcp::OwnedReadHalf>,
    code: &str,
) -> Result<(), MailError> {
    loop {
        let mut line = String::new();
        // A reply line longer than SMTP allows is not waited for whole.
        if (&mut *rd).take(1024).read_line(&mut line).await? == 0 {
            return Err(MailError::Reply(line));
        }
        if !line.starts_with(code) {
            return Err(MailError::Reply(line));
        }
        // `250-...` lines continue the reply.
        if line.as_bytes().get(3) != Some(&b'-') {
            return Ok(());
        }
    }
}
