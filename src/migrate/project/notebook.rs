//! Jupyter notebooks (nbformat 4).

pub fn validate(_text: &str) -> Result<(), String> {
    Ok(())
}
