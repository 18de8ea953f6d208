"""Study designs before spending: priced plans, precision targets and group-sequential designs."""
