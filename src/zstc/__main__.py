from zstc.cli import main

main()
