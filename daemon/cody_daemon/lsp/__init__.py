"""Language servers: diagnostics after edits and symbol lookups (README "Language servers").

The only pygls code besides rpc/ (pygls' LSP *client*: lsp/client.py). The engine reaches
this package only through its `CodeServers` port (engine/ports.py), which app.py fills with
`service.LanguageServers`; that module imports no pygls, and the pool loads on first use.
"""
