"""Stage text without Triton: normalisation, debug locations to source lines, outlines, resources from
tool logs, and Pygments lexers for Triton's IRs, SASS and AMDGCN."""
