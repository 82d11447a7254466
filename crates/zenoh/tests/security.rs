//! Zenoh's security through `zenoh://?config=PATH`: a listener that requires mutual TLS and a user/password (the
//! the example in docs/zenoh-and-bridges.md, with certificates this test makes with rcgen) lets the right peer in and refuses, with an error
//! that says so, a peer whose certificate another CA signed, one with no certificate, and one with a wrong password.

use std::net::TcpListener;
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use nerve_bus::{Bus, Origin, Received};
use rcgen::{BasicConstraints, CertificateParams, CertifiedIssuer, IsCa, KeyPair};

/// A CA, and a certificate for `localhost` it signs; written as `NAME-ca.pem`, `NAME.pem`, `NAME.key`.
fn pki(dir: &Path, name: &str) {
    let mut ca = CertificateParams::new(Vec::<String>::new()).unwrap();
    ca.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    let ca = CertifiedIssuer::self_signed(ca, KeyPair::generate().unwrap()).unwrap();
    let key = KeyPair::generate().unwrap();
    let cert = CertificateParams::new(vec!["localhost".to_owned()]).unwrap().signed_by(&key, &ca).unwrap();
    std::fs::write(dir.join(format!("{name}-ca.pem")), ca.pem()).unwrap();
    std::fs::write(dir.join(format!("{name}.pem")), cert.pem()).unwrap();
    std::fs::write(dir.join(format!("{name}.key")), key.serialize_pem()).unwrap();
}

/// A JSON5 config: TLS with `ca`, this side's certificate `me` (or none), and a user/password (or none).
fn config(dir: &Path, file: &str, ca: &str, me: Option<&str>, login: Option<(&str, &str)>, dictionary: bool) -> String {
    let p = |f: String| dir.join(f).display().to_string();
    let mut tls = format!("root_ca_certificate: \"{}\", enable_mtls: true", p(format!("{ca}-ca.pem")));
    if let Some(me) = me {
        for side in ["listen", "connect"] {
            tls += &format!(
                ", {side}_certificate: \"{}\", {side}_private_key: \"{}\"",
                p(format!("{me}.pem")),
                p(format!("{me}.key"))
            );
        }
    }
    let mut usrpwd = String::new();
    if let Some((user, password)) = login {
        usrpwd += &format!("user: \"{user}\", password: \"{password}\",");
    }
    if dictionary {
        std::fs::write(dir.join("users.txt"), "robot:s3cret\noperator:0p3rator\n").unwrap();
        usrpwd += &format!("dictionary_file: \"{}\",", p("users.txt".into()));
    }
    let text = format!("{{ transport: {{ link: {{ tls: {{ {tls} }} }}, auth: {{ usrpwd: {{ {usrpwd} }} }} }} }}");
    let path = dir.join(file);
    std::fs::write(&path, text).unwrap();
    path.display().to_string()
}

#[test]
fn mutual_tls_and_passwords_let_the_right_peer_in_and_refuse_the_others() {
    nerve_zenoh::register();
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    pki(d, "fleet");
    pki(d, "rogue");
    let port = TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let router_cfg = config(d, "router.json5", "fleet", Some("fleet"), Some(("router", "r0uter")), true);
    let prefix = format!("sec{}", std::process::id());
    let router = Bus::new(Some(&format!(
        "zenoh://?mode=router&scouting=off&listen=tls/localhost:{port}&prefix={prefix}&config={router_cfg}"
    )))
    .unwrap();
    let seen: Arc<Mutex<Vec<Received>>> = Arc::default();
    let s = Arc::clone(&seen);
    let _sub = router.subscribe_raw("CMD", move |m| s.lock().unwrap().push(m.clone())).unwrap();
    let _d = router.spawn_dispatcher().unwrap();

    let client =
        |cfg: String| Bus::new(Some(&format!("zenoh://tls/localhost:{port}?mode=client&prefix={prefix}&config={cfg}")));

    // The right certificate and password: in, and messages cross.
    let good = client(config(d, "good.json5", "fleet", Some("fleet"), Some(("robot", "s3cret")), false))
        .unwrap_or_else(|e| panic!("the right peer was refused: {e}"));
    let end = Instant::now() + Duration::from_secs(10);
    while seen.lock().unwrap().is_empty() {
        assert!(Instant::now() < end, "nothing crossed the TLS link");
        good.publish_raw("CMD", b"go").unwrap();
        std::thread::sleep(Duration::from_millis(20));
    }
    assert_eq!(seen.lock().unwrap()[0].origin, Origin::Transport);

    // Refused: another CA's certificate, no certificate, a wrong password, an unknown user.
    let refused = [
        ("rogue certificate", config(d, "rogue.json5", "fleet", Some("rogue"), Some(("robot", "s3cret")), false)),
        ("no certificate", config(d, "nocert.json5", "fleet", None, Some(("robot", "s3cret")), false)),
        ("wrong password", config(d, "badpw.json5", "fleet", Some("fleet"), Some(("robot", "guess")), false)),
        ("unknown user", config(d, "nouser.json5", "fleet", Some("fleet"), Some(("mallory", "s3cret")), false)),
    ];
    for (what, cfg) in refused {
        let e = match client(cfg) {
            Ok(_) => panic!("{what}: let in"),
            Err(e) => chain(&e),
        };
        eprintln!("{what}: {e}");
        assert!(e.contains("zenoh") && e.contains(&format!("tls/localhost:{port}")), "{what}: unclear error: {e}");
    }
}

/// An error and its sources, as the CLI prints them.
fn chain(e: &dyn std::error::Error) -> String {
    let mut text = e.to_string();
    let mut source = e.source();
    while let Some(s) = source {
        text += &format!(": {s}");
        source = s.source();
    }
    text
}
