"""Generated BackendConfig modules: drop-in replacements for torch's builders."""
