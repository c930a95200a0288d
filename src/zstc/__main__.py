from zstc.entry import main

main()
