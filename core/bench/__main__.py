from core.bench.cli import main

raise SystemExit(main())
