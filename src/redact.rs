//! Credentials in URLs (`https://user:token@host/…`, as private package indexes and Hub mirrors
//! are often given) are never printed nor written into a report: the user information becomes
//! `***`.

/// `text` with the user information of every `scheme://user[:password]@host` in it replaced by
/// `***`.
pub fn credentials(text: &str) -> String {
    replace_userinfo(text, |_| "***".to_string())
}

/// [`credentials`] that keeps every byte offset: each byte of the user information becomes `*`
/// (for code frames, whose labels point into the text by offset).
pub fn credentials_in_place(text: &str) -> String {
    replace_userinfo(text, |info| "*".repeat(info.len()))
}

fn replace_userinfo(text: &str, mask: impl Fn(&str) -> String) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(i) = rest.find("://") {
        let (before, after) = rest.split_at(i + 3);
        out.push_str(before);
        // The authority ends at the path, query, fragment or the end of the URL.
        let authority_end = after
            .find(|c: char| c.is_whitespace() || matches!(c, '/' | '?' | '#' | '"' | '\'' | '`' | '<' | '>'))
            .unwrap_or(after.len());
        match after[..authority_end].rfind('@') {
            Some(at) if at > 0 => {
                out.push_str(&mask(&after[..at]));
                rest = &after[at..];
            }
            _ => rest = after,
        }
    }
    out.push_str(rest);
    out
}

/// A URL without its user information, and that information as (user, password) when there.
pub fn split_userinfo(url: &str) -> (String, Option<(String, Option<String>)>) {
    match reqwest::Url::parse(url) {
        Ok(mut u) if !u.username().is_empty() || u.password().is_some() => {
            let decode = |s: &str| percent_encoding::percent_decode_str(s).decode_utf8_lossy().into_owned();
            let user = (decode(u.username()), u.password().map(decode));
            let _ = u.set_username("");
            let _ = u.set_password(None);
            (u.to_string().trim_end_matches('/').to_string(), Some(user))
        }
        _ => (url.to_string(), None),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn user_information_is_hidden() {
        assert_eq!(
            credentials("-f https://me:s3cr3t@pypi.example/simple and http://tok@h:8080/x?a=b@c"),
            "-f https://***@pypi.example/simple and http://***@h:8080/x?a=b@c"
        );
        assert_eq!(
            credentials("https://pypi.org/simple `x@y` s3://bucket"),
            "https://pypi.org/simple `x@y` s3://bucket"
        );
        assert_eq!(credentials("git+ssh://git@github.com/a/b"), "git+ssh://***@github.com/a/b");
        let line = "-f https://mé:s3@pypi.example/simple";
        assert_eq!(credentials_in_place(line), "-f https://******@pypi.example/simple");
        assert_eq!(credentials_in_place(line).len(), line.len());
    }

    #[test]
    fn userinfo_is_split_off() {
        let (url, user) = split_userinfo("http://me:p%40ss@127.0.0.1:9/");
        assert_eq!(url, "http://127.0.0.1:9");
        assert_eq!(user, Some(("me".to_string(), Some("p@ss".to_string()))));
        assert_eq!(split_userinfo("https://huggingface.co").1, None);
    }
}
