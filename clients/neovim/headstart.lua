--- Headstart for Neovim: AI code completion from `headstart serve`.
---
--- Neovim 0.12+: the suggestion is ghost text (LSP textDocument/inlineCompletion, through
--- vim.lsp.inline_completion) and <Tab> accepts it. Neovim 0.11: the suggestion is one item
--- of the completion menu (textDocument/completion), e.g. with <C-x><C-o>.
---
--- Load it from init.lua with `dofile('/path/to/headstart/clients/neovim/headstart.lua')`, or
--- copy it to ~/.config/nvim/plugin/. Options, all optional, set before it runs:
---
---   vim.g.headstart = {
---     cmd = { 'headstart', 'serve' },        -- how to start the server
---     settings = { backend = { url = 'http://127.0.0.1:8000/v1' } },  -- README, "Settings"
---     filetypes = { 'python', 'go' },        -- the buffers to attach to
---     root_markers = { '.git' },             -- what marks a project's root
---     accept_key = '<Tab>',                  -- false: map nothing
---   }

if vim.fn.has('nvim-0.11') == 0 then
  vim.notify('headstart.lua needs Neovim 0.11 or newer', vim.log.levels.WARN)
  return
end

local defaults = {
  cmd = { 'headstart', 'serve' },
  settings = {},
  filetypes = {
    'c', 'cpp', 'cs', 'go', 'java', 'javascript', 'javascriptreact', 'kotlin', 'lua',
    'php', 'python', 'ruby', 'rust', 'scala', 'sh', 'swift', 'typescript', 'typescriptreact',
  },
  root_markers = {
    '.git', 'pyproject.toml', 'setup.py', 'package.json', 'go.mod', 'Cargo.toml', 'pom.xml',
    'build.gradle', 'build.gradle.kts',
  },
  accept_key = '<Tab>',
}
-- Shallow on purpose: a list given by the user replaces the default list.
local opts = vim.tbl_extend('force', defaults, vim.g.headstart or {})
-- An empty table would be sent as a JSON array, which the server rightly rejects.
local settings = next(opts.settings) and opts.settings or nil

vim.lsp.config('headstart', {
  cmd = opts.cmd,
  filetypes = opts.filetypes,
  root_markers = opts.root_markers,
  -- The same object twice: at initialize, and as the `headstart` section for
  -- workspace/configuration (which Neovim answers from `settings`).
  init_options = settings,
  settings = settings and { headstart = settings } or nil,
})
vim.lsp.enable('headstart')

if vim.lsp.inline_completion then
  vim.lsp.inline_completion.enable()
  local key = opts.accept_key
  if key then
    vim.keymap.set('i', key, function()
      if not vim.lsp.inline_completion.get() then
        return key
      end
    end, { expr = true, desc = 'Headstart: accept the inline suggestion' })
  end
else
  vim.api.nvim_create_autocmd('LspAttach', {
    group = vim.api.nvim_create_augroup('headstart', { clear = true }),
    callback = function(args)
      local client = vim.lsp.get_client_by_id(args.data.client_id)
      if client and client.name == 'headstart' then
        vim.lsp.completion.enable(true, client.id, args.buf)
      end
    end,
  })
end
